"""``tf.range``: the ``Range`` op (shape function, kernel, constructor), as TF's.

The dtype is inferred as TF infers it: each Python argument converts on its own (an int
that does not fit int32 becomes int64, a float float32) and all three are cast to the
widest of int32 < int64 < float16 < bfloat16 < float32 < float64, so ``tf.range(2**48)``
is int64, never a wrapped int32. The size is TF's ``RangeSize``: the shape function checks
constant arguments while building (ValueError), the kernel checks them at run time
(InvalidArgumentError: zero ``delta``, ``start`` past ``limit``, more than 2**63 - 1
elements) and checks the output fits in memory before allocating (ResourceExhaustedError).
Range has no gradient (``array_grad`` lists it as not differentiable).
Imports: numpy, the framework, errors, i18n and ``ops.common`` / ``ops.allocation``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.allocation import INT64_MAX, guard_allocation
from tfteach.ops.common import const_value, convert_to_tensor, graph_of, shape_error

__all__ = ["range_"]

# TF's order for inferring tf.range's dtype from its three arguments.
_DTYPE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16, dtypes.float32,
                dtypes.float64)


def _scalar(value: Any) -> int | float:
    """A scalar input as a Python int or float (exact arithmetic, no int64 wrap-around)."""
    item = np.asarray(value).item()
    return item if isinstance(item, (int, float)) else float(item)


def range_size(start: Any, limit: Any, delta: Any,
               running: bool = False) -> tuple[int, str | None]:
    """TF's ``RangeSize``: (number of elements, None), or (0, the reason it is invalid, in
    the shape function's words, or the kernel's when ``running``)."""
    start, limit, delta = _scalar(start), _scalar(limit), _scalar(delta)
    if delta == 0:
        return 0, f"Requires delta != 0: {delta}" if running else "Requires delta != 0"
    if delta > 0 and start > limit:
        return 0, f"Requires start <= limit when delta > 0: {start}/{limit}"
    if delta < 0 and start < limit:
        return 0, f"Requires start >= limit when delta < 0: {start}/{limit}"
    if all(isinstance(v, int) for v in (start, limit, delta)):
        size = -(-abs(limit - start) // abs(delta))
    else:
        size = math.ceil(abs((limit - start) / delta))
    if size > INT64_MAX:
        return 0, f"Requires ((limit - start) / delta) <= {INT64_MAX}"
    return int(size), None


def _known_value(t: Tensor) -> Any:
    """A constant input's value, also through the Cast that ``range_`` may add (TF's shape
    inference evaluates it too); None when it is only known at run time."""
    if t.op.type == "Cast":
        value = const_value(t.op.inputs[0])
        return None if value is None else np.asarray(value).astype(t.dtype.np)
    return const_value(t)


def _range_shape(op):
    values = [_known_value(t) for t in op.inputs]
    dt = op.inputs[0].dtype
    if any(v is None for v in values):
        return [(dt, unknown_shape(1))]
    size, problem = range_size(*values)
    if problem is not None:
        raise shape_error(op, problem)
    return [(dt, TensorShape([size]))]


def _range_kernel(ctx, start, limit, delta):
    device = ctx.device
    start, limit, delta = (device.to_host(v) for v in (start, limit, delta))
    size, problem = range_size(start, limit, delta, running=True)
    if problem is not None:
        op = ctx.op
        raise errors.InvalidArgumentError(
            f"{problem}\n\t [[Node: {op.summary()}]]", op=op,
            hint=tr("tf.range(start, limit, delta) counts from start towards limit in steps "
                    "of delta: delta must not be 0, must point from start to limit, and the "
                    "range must have fewer than 2**63 elements."))
    dt = ctx.attrs["Tidx"]
    guard_allocation(ctx, [size], dt)
    return np.arange(_scalar(start), _scalar(limit), _scalar(delta), dtype=dt.np)[:size]


register_op("Range", _range_shape, _range_kernel, dtype_attr="Tidx")


def _infer_dtype(tensors: list[Tensor]) -> dtypes.DType:
    """The widest of the arguments' dtypes in TF's order (the first one's if any is outside)."""
    if not all(t.dtype in _DTYPE_ORDER for t in tensors):
        return tensors[0].dtype
    return max((t.dtype for t in tensors), key=_DTYPE_ORDER.index)


def _cast(t: Tensor, dtype: dtypes.DType) -> Tensor:
    if t.dtype is dtype:
        return t
    return t.graph.create_op("Cast", [t], {"SrcT": t.dtype, "DstT": dtype},
                             name="Cast").outputs[0]


def range_(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,
           name: str = "range") -> Tensor:
    """``tf.range``: like Python's range, as a tensor (dtype inferred as TF infers it)."""
    if limit is None:
        start, limit = 0, start
    g = graph_of([start, limit, delta])
    with g.as_default(), g.name_scope(name) as scope:
        wanted = dtypes.as_dtype(dtype) if dtype is not None else None
        ts = [v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=wanted, name=n)
              for v, n in ((start, "start"), (limit, "limit"), (delta, "delta"))]
        dt = wanted or _infer_dtype(ts)
        ts = [_cast(t, dt) for t in ts]
        return g.create_op("Range", ts, {"Tidx": dt}, name=scope).outputs[0]
