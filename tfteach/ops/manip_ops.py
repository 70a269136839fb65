"""Joining, cutting and tiling: ConcatV2 (with ConcatOffset, for its gradient), Split, Pack
(``stack``), Unpack (``unstack``), Tile, Slice and Pad.

TF keeps these in ``array_ops``, and ``tfteach.ops.array_ops`` offers them too; they live
here to keep each module short. Each op is registered with its shape function and kernel;
their gradients are in ``array_grad``. This module needs only ``common`` (``array_ops``
imports it, never the other way round).
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import ALL_TYPES, register_op
from tfteach.framework.tensor_shape import Dimension, TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.allocation import element_count, guard_allocation, shape_dtype
from tfteach.ops.common import (const_value, convert_to_tensor, create_op, host_ints,
                                same_dtype, shape_error)


# ---- ConcatV2 ------------------------------------------------------------------------------
def _concat_shape(op):
    *values, axis_t = op.inputs
    axis = const_value(axis_t)
    dt = values[0].dtype
    if axis is None or any(v.shape.dims is None for v in values):
        return [(dt, unknown_shape(values[0].shape.ndims))]
    r = values[0].shape.ndims
    ax = int(axis) + r if int(axis) < 0 else int(axis)
    out = list(values[0].shape.dims)
    for v in values[1:]:
        if v.shape.ndims != r:
            raise shape_error(op, f"Shape must be rank {r} but is rank {v.shape.ndims}")
        for i, (a, b) in enumerate(zip(out, v.shape.dims, strict=True)):
            if i == ax:
                out[i] = None if a is None or b is None else a + b
            elif a is not None and b is not None and a != b:
                raise shape_error(op, f"Dimension {i} in both shapes must be equal, but are "
                                      f"{a} and {b}. Shapes are {values[0].shape.bracket()} "
                                      f"and {v.shape.bracket()}")
            elif a is None:
                out[i] = b              # another input knows it (TF merges them)
    return [(dt, TensorShape(out))]


register_op("ConcatV2", _concat_shape,
            lambda ctx, *xs: ctx.xp.concatenate(xs[:-1], axis=int(ctx.device.to_host(xs[-1]))))


def _concat_offset_kernel(ctx, axis, *shapes):
    shapes = [np.asarray(ctx.device.to_host(s)) for s in shapes]
    ax = int(ctx.device.to_host(axis)) % max(len(shapes[0]), 1)
    out, at = [], 0
    for s in shapes:
        offset = np.zeros_like(s)
        offset[ax] = at
        at += int(s[ax])
        out.append(offset)
    return tuple(out)


register_op("ConcatOffset", lambda op: [(dtypes.int32, t.shape) for t in op.inputs[1:]],
            _concat_offset_kernel)


def concat(values: list, axis: int, name: str = "concat") -> Tensor:
    ts = [convert_to_tensor(v) for v in values]
    same_dtype("ConcatV2", ts, "values")
    if len(ts) == 1:
        return create_op("Identity", ts, {"T": ts[0].dtype}, name).outputs[0]
    with ts[0].graph.as_default(), ts[0].graph.name_scope(name) as scope:
        ax = convert_to_tensor(axis, dtype=dtypes.int32, name="axis")
        return create_op("ConcatV2", ts + [ax], {"T": ts[0].dtype, "N": len(ts)},
                       scope[:-1] + "/").outputs[0]


# ---- Split ---------------------------------------------------------------------------------
def _split_shape(op):
    axis_t, x = op.inputs
    n = op.attrs["num_split"]
    axis = const_value(axis_t)
    if axis is None or x.shape.dims is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))] * n
    ax = int(axis) % x.shape.ndims
    dims = list(x.shape.dims)
    if dims[ax] is not None:
        if dims[ax] % n:
            raise shape_error(op, f"Dimension size must be evenly divisible by {n} but is "
                                  f"{dims[ax]}")
        dims[ax] //= n
    return [(x.dtype, TensorShape(dims))] * n


def _outputs(parts: Any) -> Any:
    """A multi-output kernel's result; one output is the array itself, not a 1-tuple."""
    parts = tuple(parts)
    return parts[0] if len(parts) == 1 else parts


register_op("Split", _split_shape,
            lambda ctx, a, x: _outputs(ctx.xp.split(x, ctx.attrs["num_split"],
                                                    axis=int(ctx.device.to_host(a)))))


def split(value: Any, num_or_size_splits: int, axis: int = 0, name: str = "split") -> list:
    t = convert_to_tensor(value)
    if isinstance(num_or_size_splits, Dimension):      # split(x, x.get_shape()[1], 1)
        num_or_size_splits = num_or_size_splits.value
    if not isinstance(num_or_size_splits, int):
        raise NotImplementedError("tfteach's split takes a number of equal splits.")
    with t.graph.as_default():
        ax = convert_to_tensor(axis, dtype=dtypes.int32, name="split/split_dim")
    return list(create_op("Split", [ax, t], {"T": t.dtype, "num_split": num_or_size_splits},
                        name).outputs)


# ---- Pack, Unpack ----------------------------------------------------------------------------
def _pack_shape(op):
    first = op.inputs[0]
    if first.shape.dims is None:
        return [(first.dtype, unknown_shape())]
    dims = list(first.shape.dims)
    ax = op.attrs["axis"] if op.attrs["axis"] >= 0 else len(dims) + 1 + op.attrs["axis"]
    dims.insert(ax, len(op.inputs))
    return [(first.dtype, TensorShape(dims))]


register_op("Pack", _pack_shape, lambda ctx, *xs: ctx.xp.stack(xs, axis=ctx.attrs["axis"]))


def _unpack_shape(op):
    x = op.inputs[0]
    n = op.attrs["num"]
    if x.shape.dims is None:
        return [(x.dtype, unknown_shape())] * n
    dims = list(x.shape.dims)
    ax = op.attrs["axis"] % len(dims)
    if dims[ax] is not None and dims[ax] != n:
        raise shape_error(op, f"Dimension must be {n} but is {dims[ax]}")
    del dims[ax]
    return [(x.dtype, TensorShape(dims))] * n


def _unpack_kernel(ctx, x):
    ax = ctx.attrs["axis"]
    return _outputs(ctx.xp.take(x, i, axis=ax) for i in range(x.shape[ax]))


register_op("Unpack", _unpack_shape, _unpack_kernel)


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list:
    """Split ``value`` along ``axis`` into ``num`` tensors of one rank less."""
    t = convert_to_tensor(value)
    if num is None:
        num = t.shape.dims[axis] if t.shape.dims is not None else None
        if num is None:
            raise ValueError(f"Cannot infer num from shape {t.shape}")
    return list(create_op("Unpack", [t], {"T": t.dtype, "num": num, "axis": axis}, name).outputs)


def stack(values: list, axis: int = 0, name: str = "stack") -> Tensor:
    ts = [convert_to_tensor(v) for v in values]
    same_dtype("Pack", ts, "values")
    return create_op("Pack", ts, {"T": ts[0].dtype, "N": len(ts), "axis": axis}, name).outputs[0]


# ---- Tile ------------------------------------------------------------------------------------
def _tile_shape(op):
    x, m = op.inputs
    mult = const_value(m)
    if mult is None or x.shape.dims is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))]
    _check_rank(op, x.shape.ndims, len(mult))
    return [(x.dtype, TensorShape([None if d is None else d * int(k)
                                   for d, k in zip(x.shape.dims, mult, strict=True)]))]


def _check_rank(op, expected: int, actual: int) -> None:
    """TF's shape-function error when a per-axis argument has the wrong length."""
    if expected != actual:
        raise shape_error(op, f"Shape must be rank {expected} but is rank {actual}")


def _tile_kernel(ctx, x, m):
    multiples = tuple(int(k) for k in ctx.device.to_host(m))
    if len(multiples) == x.ndim:
        shape = [d * k for d, k in zip(x.shape, multiples, strict=True)]
        element_count(ctx.op, shape, "would have more than 2**63 - 1 elements")
        guard_allocation(ctx, shape, ctx.attrs["T"])
    return ctx.xp.tile(x, multiples)


register_op("Tile", _tile_shape, _tile_kernel)


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    with t.graph.as_default():
        m = convert_to_tensor(multiples, dtype=shape_dtype(multiples),
                              name=f"{name or 'Tile'}/multiples")
    return create_op("Tile", [t, m], {"T": t.dtype}, name or "Tile").outputs[0]


# ---- Slice and Pad (each other's gradient) ---------------------------------------------------
def _slice_shape(op):
    x, begin, size_t = op.inputs
    b, sz = const_value(begin), const_value(size_t)
    if b is None or sz is None or x.shape.dims is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))]
    _check_rank(op, len(b), x.shape.ndims)
    _check_rank(op, len(sz), x.shape.ndims)
    dims = [(None if d is None else d - int(bi)) if int(si) == -1 else int(si)
            for d, bi, si in zip(x.shape.dims, b, sz, strict=True)]
    return [(x.dtype, TensorShape(dims))]


def _slice_kernel(ctx, x, begin, size_t):
    b, sz = host_ints(ctx, begin), host_ints(ctx, size_t)
    if not len(b) == len(sz) == x.ndim:
        raise errors.InvalidArgumentError(
            f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, but got "
            f"shapes [{len(b)}] and [{len(sz)}] instead.", op=ctx.op,
            hint=tr("give one begin and one size per axis of the input."))
    index = tuple(builtins.slice(b, None if s == -1 else b + s)
                  for b, s in zip(b, sz, strict=True))
    return x[index]


register_op("Slice", _slice_shape, _slice_kernel, gpu_types=ALL_TYPES)


def slice_(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:
    """``tf.slice``: ``size[i]`` elements from ``begin[i]`` along each axis (-1: to the end)."""
    t = convert_to_tensor(input_)
    with t.graph.as_default():
        b = convert_to_tensor(begin, dtype=dtypes.int32, name="begin")
        s = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    return create_op("Slice", [t, b, s], {"T": t.dtype, "Index": dtypes.int32},
                   name or "Slice").outputs[0]


def _pad_shape(op):
    x, paddings = op.inputs
    p = const_value(paddings)
    if p is None or x.shape.dims is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))]
    _check_rank(op, len(p), x.shape.ndims)
    return [(x.dtype, TensorShape([None if d is None else d + int(a) + int(b)
                                   for d, (a, b) in zip(x.shape.dims, np.asarray(p),
                                                        strict=True)]))]


def _pad_kernel(ctx, x, paddings):
    p = np.asarray(ctx.device.to_host(paddings)).reshape(-1, 2)
    return ctx.xp.pad(x, [(int(a), int(b)) for a, b in p])


register_op("Pad", _pad_shape, _pad_kernel)


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: str | None = None) -> Tensor:
    """Zeros around ``tensor``: ``paddings[i] = [before, after]`` for axis i."""
    if mode.upper() != "CONSTANT":
        raise NotImplementedError("tfteach's pad supports mode='CONSTANT' only.")
    t = convert_to_tensor(tensor)
    with t.graph.as_default():
        p = convert_to_tensor(paddings, dtype=dtypes.int32, name="paddings")
    return create_op("Pad", [t, p], {"T": t.dtype, "Tpaddings": dtypes.int32},
                   name or "Pad").outputs[0]
