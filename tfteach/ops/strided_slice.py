"""StridedSlice: ``tensor[...]`` and ``tf.strided_slice``, with TF's masks; and its
gradient, StridedSliceGrad.

``t[1:, 0]``, ``t[..., ::2]``, ``t[:, None]`` and ``tf.shape(x)[0]`` build one StridedSlice
op named ``strided_slice``, as TF's ``_slice_helper`` does: the begin, end and strides
vectors hold one entry per item of the index, and five bit masks say which entries are
open (``begin_mask``, ``end_mask``), the ellipsis, a new axis, or an integer that removes
its axis (``shrink_axis_mask``). The kernel turns them back into a NumPy (or CuPy) index.
This module needs ``common``, ``array_ops`` and ``manip_ops``; none of them imports it.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, register_operator
from tfteach.framework.registry import ALL_TYPES, register_op, set_gradient
from tfteach.framework.tensor_shape import Dimension, TensorShape, unknown_shape
from tfteach.ops.array_ops import cast, ones_like, shape_of
from tfteach.ops.common import (const_value, convert_to_tensor, create_op, host_ints,
                                shape_error)
from tfteach.ops.manip_ops import stack

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


# a begin or end entry known only when the op runs (a tensor index, e.g. ``x[i]``)
_RUN_TIME = type("RunTimeBound", (), {"__repr__": lambda self: "<run time>"})()


def _bit(mask: int, i: int) -> bool:
    return bool(mask >> i & 1)


def _spec(begin: list, end: list, strides: list, attrs: dict) -> list:
    """The index as items: ``Ellipsis``, ``None`` (a new axis), an int (shrinks its axis) or
    a ``slice``; an entry known only at run time is ``_RUN_TIME`` in ``begin``/``end``."""
    b_mask, e_mask, ellipsis, new_axis, shrink = (attrs[m] for m in _MASKS)
    items: list = []
    for i, stride in enumerate(strides):
        if _bit(ellipsis, i):
            items.append(Ellipsis)
        elif _bit(new_axis, i):
            items.append(None)
        elif _bit(shrink, i):
            items.append(begin[i])
        else:
            items.append(builtins.slice(None if _bit(b_mask, i) else begin[i],
                                        None if _bit(e_mask, i) else end[i], stride))
    return items


def _axes(items: list, rank: int) -> list:
    """``(item, input axis or None)`` for each item, the ellipsis expanded to full slices."""
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    out, axis = [], 0
    for it in items:
        if it is Ellipsis:
            for _ in range(max(rank - used, 0)):
                out.append((builtins.slice(None), axis))
                axis += 1
        elif it is None:
            out.append((None, None))
        else:
            out.append((it, axis))
            axis += 1
    out += [(builtins.slice(None), a) for a in range(axis, rank)]
    return out


def _problem(items: list, strides: list, shape: list) -> str | None:
    """What TF says of an index that ``shape`` (None: an unknown size) cannot take, or None."""
    if 0 in strides:
        return f"strides[{strides.index(0)}] must be non-zero"
    if not shape and any(it is not None and it is not Ellipsis for it in items):
        return "Attempting to slice scalar input."
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    if used > len(shape):
        return f"Index out of range using input dim {len(shape)}; input has only " \
               f"{len(shape)} dims"
    for it, axis in _axes(items, len(shape)):
        size = None if axis is None else shape[axis]
        if isinstance(it, int) and size is not None and not -size <= it < size:
            return f"slice index {it} of dimension {axis} out of bounds."
    return None


def _strided_slice_shape(op: Any) -> list:
    x, begin, end, strides = op.inputs
    values = [const_value(t) for t in (begin, end, strides)]
    if x.shape.ndims is None or values[2] is None:
        return [(x.dtype, unknown_shape())]
    steps = np.atleast_1d(values[2]).tolist()
    bounds = [_bounds(v, t, len(steps)) for v, t in zip(values[:2], (begin, end), strict=True)]
    if any(b is None for b in bounds):
        return [(x.dtype, unknown_shape())]
    items = _spec(*bounds, steps, op.attrs)
    problem = _problem(items, steps, x.shape.as_list())
    if problem:
        raise shape_error(op, problem)
    dims = []
    for it, axis in _axes(items, x.shape.ndims):
        size = None if axis is None else x.shape.as_list()[axis]
        if it is None:
            dims.append(1)
        elif isinstance(it, builtins.slice):
            known = size is not None and _RUN_TIME not in (it.start, it.stop)
            dims.append(len(range(*it.indices(size))) if known else None)
    return [(x.dtype, TensorShape(dims))]


def _bounds(value: Any, t: Tensor, n: int) -> list | None:
    """``begin``/``end`` as a list: its values, or, known only at run time (``x[i]`` in a
    loop), ``_RUN_TIME`` for each of its ``n`` entries (TF's shape function then still
    knows the rank, the shrunk axes and the masked ones); None when not even that."""
    if value is not None:
        return np.atleast_1d(value).tolist()
    if t.shape.rank == 1 and t.shape.dims[0] == n:
        return [_RUN_TIME] * n
    return None


def _strided_slice_kernel(ctx: Any, x: Any, begin: Any, end: Any, strides: Any) -> Any:
    steps = host_ints(ctx, strides)
    items = _spec(host_ints(ctx, begin), host_ints(ctx, end), steps, ctx.attrs)
    problem = _problem(items, steps, list(x.shape))
    if problem:
        raise errors.InvalidArgumentError(problem, op=ctx.op)
    return ctx.xp.asarray(x[tuple(items)])


register_op("StridedSlice", _strided_slice_shape, _strided_slice_kernel, gpu_types=ALL_TYPES)


def _grad_shape(op: Any) -> list:
    shape = const_value(op.inputs[0])
    dy = op.inputs[4]
    return [(dy.dtype, unknown_shape() if shape is None else TensorShape(shape.tolist()))]


def _grad_kernel(ctx: Any, shape: Any, begin: Any, end: Any, strides: Any, dy: Any) -> Any:
    items = _spec(host_ints(ctx, begin), host_ints(ctx, end), host_ints(ctx, strides),
                  ctx.attrs)
    dx = ctx.xp.zeros(tuple(host_ints(ctx, shape)), dtype=dy.dtype)
    dx[tuple(items)] = dy
    return dx


register_op("StridedSliceGrad", _grad_shape, _grad_kernel, gpu_types=ALL_TYPES)


def _strided_slice_grad(op: Any, grad: Tensor) -> list:
    x, begin, end, strides = op.inputs
    attrs = {m: op.attrs[m] for m in _MASKS}
    shape = convert_to_tensor(shape_of(x), dtype=dtypes.int32, name="Shape")
    dx = create_op("StridedSliceGrad", [shape, begin, end, strides, grad],
                   {"T": grad.dtype, "Index": dtypes.int32, **attrs}, None).outputs[0]
    return [dx, None, None, None]


set_gradient("StridedSlice", _strided_slice_grad)


def strided_slice(input_: Any, begin: Any, end: Any, strides: Any = None, begin_mask: int = 0,
                  end_mask: int = 0, ellipsis_mask: int = 0, new_axis_mask: int = 0,
                  shrink_axis_mask: int = 0, var: Any = None,
                  name: str | None = None) -> Tensor:
    """``tf.strided_slice``: ``input_[begin:end:strides]`` along each axis, with TF's masks
    (``var`` is accepted, as TF's, and unused)."""
    t = convert_to_tensor(input_)
    masks = dict(zip(_MASKS, (begin_mask, end_mask, ellipsis_mask, new_axis_mask,
                              shrink_axis_mask), strict=True))
    with t.graph.as_default(), t.graph.name_scope(name or "StridedSlice") as scope:
        b = convert_to_tensor(begin, dtype=dtypes.int32, name="stack")
        e = convert_to_tensor(end, dtype=dtypes.int32, name="stack_1")
        s = ones_like(b, name="ones_like") if strides is None else \
            convert_to_tensor(strides, dtype=dtypes.int32, name="stack_2")
        return create_op("StridedSlice", [t, b, e, s],
                         {"T": t.dtype, "Index": dtypes.int32, **masks},
                         scope[:-1] + "/").outputs[0]


def _slice_helper(tensor: Tensor, spec: Any) -> Tensor:
    """``tensor[spec]`` as TF builds it (``array_ops._slice_helper``)."""
    items = spec if isinstance(spec, builtins.tuple) else (spec,)
    begin, end, strides, masks = [], [], [], [0] * 5
    for i, item in enumerate(items):
        if isinstance(item, builtins.slice):
            begin.append(0 if item.start is None else item.start)
            end.append(0 if item.stop is None else item.stop)
            strides.append(1 if item.step is None else item.step)
            masks[0] |= (item.start is None) << i
            masks[1] |= (item.stop is None) << i
        elif item is Ellipsis or item is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks[2 if item is Ellipsis else 3] |= 1 << i
        else:
            index = _index(item)
            begin.append(index)
            end.append(index + 1)
            strides.append(1)
            masks[4] |= 1 << i
    with tensor.graph.as_default():
        packed = [_pack(v) for v in (begin, end, strides)]
    return strided_slice(tensor, *packed, *masks, name="strided_slice")


def _index(item: Any) -> Any:
    """An integer index (a Python or NumPy int, or a scalar integer tensor)."""
    if isinstance(item, Tensor):
        if item.dtype not in (dtypes.int32, dtypes.int64) or item.shape.ndims not in (0, None):
            raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`), tf.newaxis "
                            f"(`None`) and scalar tf.int32/tf.int64 tensors are valid "
                            f"indices, got {item!r}")
        return item
    if isinstance(item, Dimension) and item.value is not None:     # x[:, shape[1] - 1]
        item = item.value
    if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
        raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) "
                        f"and scalar tf.int32/tf.int64 tensors are valid indices, got "
                        f"{item!r}")
    return int(item)


def _pack(values: list) -> Any:
    """A list of ints, or a ``stack`` of them when one is a tensor."""
    if not any(isinstance(v, Tensor) for v in values):
        return values
    return stack([cast(v, dtypes.int32) if isinstance(v, Tensor) else v for v in values])


register_operator("__getitem__", _slice_helper)
