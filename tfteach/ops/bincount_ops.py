"""DenseBincount (``tf.bincount``): how often each value ``0 .. size-1`` occurs in an int
tensor (or the sum of its ``weights``), composed as TF composes it: ``size`` is
``max(arr) + 1`` (0 for an empty ``arr``), raised to ``minlength``, cut to ``maxlength``.
Values at or past ``size`` are not counted; a negative one is InvalidArgumentError, as in
TF. Not differentiable. No state.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of

__all__ = ["bincount"]


def _bincount_shape(op: Any) -> list:
    size = const_value(op.inputs[1])
    return [(op.attrs["T"], TensorShape([None if size is None else int(size)]))]


def _bincount_kernel(ctx: Any, arr: Any, size: Any, weights: Any) -> Any:
    xp, n = ctx.xp, int(ctx.device.to_host(size))
    if n < 0:
        raise errors.InvalidArgumentError(f"size ({n}) must be non-negative", op=ctx.op)
    if arr.size and int(arr.min()) < 0:
        raise errors.InvalidArgumentError(
            "Input arr must be non-negative!", op=ctx.op,
            hint=tr("tf.bincount counts the values 0, 1, 2, ...; a negative value has no "
                    "bin."))
    inside = arr < n
    w = weights[inside] if weights.size else None
    if ctx.attrs["binary_output"]:
        w = None
    out = xp.bincount(arr[inside].astype(np.int64), weights=w, minlength=n)[:n]
    if ctx.attrs["binary_output"]:
        out = out > 0
    return out.astype(ctx.attrs["T"].np)


register_op("DenseBincount", _bincount_shape, _bincount_kernel, gpu_types=frozenset())
not_differentiable("DenseBincount")


def _length(value: Any, name: str, dtype: Any) -> Tensor:
    return convert_to_tensor(value, dtype=dtype, name=name)


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = dtypes.int32, name: str | None = None) -> Tensor:
    """Counts of each value of ``arr`` (or sums of ``weights`` per value), a vector."""
    g = graph_of([arr, weights])
    with g.as_default(), g.name_scope(name or "bincount"):
        arr = convert_to_tensor(arr, name="arr")
        if weights is not None:
            weights = convert_to_tensor(weights, name="weights")
        if not arr.dtype.is_integer:
            arr = array_ops.cast(arr, dtypes.int32)
        nonempty = math_ops.greater(array_ops.size(arr), 0)
        size = array_ops.cast(nonempty, arr.dtype) * (math_ops.reduce_max(arr) + 1)
        if minlength is not None:
            size = math_ops.maximum(_length(minlength, "minlength", arr.dtype), size)
        if maxlength is not None:
            size = math_ops.minimum(_length(maxlength, "maxlength", arr.dtype), size)
        if weights is not None:
            weights = array_ops.reshape(weights, [-1])
        arr = array_ops.reshape(arr, [-1])
        out_type = dtypes.as_dtype(dtype) if weights is None else weights.dtype
        if weights is None:
            weights = convert_to_tensor(np.array([], dtype=out_type.np), name="Const")
        out = g.create_op("DenseBincount", [arr, size, weights], {
            "Tidx": arr.dtype, "T": out_type, "binary_output": False},
            name="DenseBincount").outputs[0]
        out.set_shape([_static_size(arr, minlength, maxlength)])
        return out


def _static_size(arr: Tensor, minlength: Any, maxlength: Any) -> int | None:
    """The output's length when ``arr`` and the lengths are constants (TF folds them)."""
    values = const_value(arr.op.inputs[0]) if arr.op.type == "Reshape" else None
    if values is None or any(isinstance(v, Tensor) for v in (minlength, maxlength)):
        return None
    n = int(np.max(values)) + 1 if np.size(values) else 0
    n = n if minlength is None else max(int(minlength), n)
    return n if maxlength is None else min(int(maxlength), n)
