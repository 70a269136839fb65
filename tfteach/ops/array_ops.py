"""Array ops: creation, shape and type changes.

Each op is registered once with its shape function, its kernel (against ``xp``) and its
gradient (``set_gradient`` right after the registration; TF's ``grad(op, *grads)``
convention), side by side. Ops: Const, Placeholder, PlaceholderWithDefault, Identity,
StopGradient, Fill, ZerosLike, OnesLike, Shape, Size, Rank, Reshape, Transpose, ConcatV2,
ConcatOffset, Split, Cast, ExpandDims, Squeeze, Pack, Unpack, Tile, Range, Slice, Pad,
BroadcastTo, BroadcastGradientArgs, InvertPermutation.
"""
from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.registry import ALL_TYPES, not_differentiable, register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tfteach.ops.common import (axis_list, const_value, convert_to_tensor, graph_of,
                                same_dtype, same_shape_fn, shape_error)


def _create(op_type: str, inputs: list, attrs: dict, name: str | None) -> Any:
    return graph_of(inputs).create_op(op_type, inputs, attrs, name=name)


# ---- Const ---------------------------------------------------------------------------------
def _const_shape(op):
    return [(op.attrs["dtype"], TensorShape(op.attrs["value"].shape))]


def _const_kernel(ctx):
    return ctx.device.from_host(ctx.attrs["value"])


register_op("Const", _const_shape, _const_kernel, gpu_types=ALL_TYPES, dtype_attr="dtype")


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const",
             verify_shape: bool = False) -> Tensor:
    """A constant tensor; ``shape=`` broadcasts a scalar or reshapes a list, as TF 1.x."""
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.infer_dtype(value)
    arr = dtypes.to_numpy(value, dt)
    if shape is not None:
        arr = _fit_shape(arr, as_shape(shape).as_list(), verify_shape)
    arr = np.array(arr, dtype=dt.np, copy=True)
    arr.setflags(write=False)
    return get_default_graph().create_op("Const", [], {"value": arr, "dtype": dt},
                                         name=name).outputs[0]


def _fit_shape(arr: np.ndarray, shape: list, verify: bool) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    if arr.shape == tuple(shape):
        return arr
    if verify:
        raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {arr.shape}.")
    if arr.size == 1:
        return np.broadcast_to(arr.reshape(()), shape)
    if arr.size == n:
        return arr.reshape(shape)
    if arr.size < n:
        flat = np.concatenate([arr.ravel(), np.repeat(arr.ravel()[-1:], n - arr.size)])
        return flat.reshape(shape)
    raise ValueError(f"Too many elements provided. Needed at most {n}, but received {arr.size}")


# ---- Placeholder ---------------------------------------------------------------------------
def _placeholder_shape(op):
    return [(op.attrs["dtype"], op.attrs["shape"])]


def _placeholder_kernel(ctx):
    from tfteach.errors import InvalidArgumentError
    op = ctx.op
    raise InvalidArgumentError(
        f"You must feed a value for placeholder tensor '{op.name}' with dtype "
        f"{op.attrs['dtype'].tf_name} and shape {op.attrs['shape'].bracket()}\n"
        f"\t [[Node: {op.summary()}]]", op=op,
        hint=f"pass feed_dict={{{op.name.split('/')[-1]}: value}} to Session.run "
             f"(a value of shape {op.attrs['shape'].bracket()}, dtype {op.attrs['dtype'].name}).")


register_op("Placeholder", _placeholder_shape, _placeholder_kernel, gpu_types=ALL_TYPES,
            dtype_attr="dtype")


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A value that must be fed at run time."""
    dt = dtypes.as_dtype(dtype)
    sh = unknown_shape() if shape is None else as_shape(shape)
    return get_default_graph().create_op("Placeholder", [], {"dtype": dt, "shape": sh},
                                         name=name or "Placeholder").outputs[0]


register_op("PlaceholderWithDefault", lambda op: [(op.inputs[0].dtype, op.attrs["shape"])],
            lambda ctx, x: x, gpu_types=ALL_TYPES, dtype_attr="dtype")
set_gradient("PlaceholderWithDefault", lambda op, grad: [grad])


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return _create("PlaceholderWithDefault", [t], {"dtype": t.dtype, "shape": as_shape(shape)},
                   name or "PlaceholderWithDefault").outputs[0]


# ---- Identity, StopGradient --------------------------------------------------------------
register_op("Identity", same_shape_fn, lambda ctx, x: x, gpu_types=ALL_TYPES)
register_op("StopGradient", same_shape_fn, lambda ctx, x: x, gpu_types=ALL_TYPES)
set_gradient("Identity", lambda op, grad: [grad])
not_differentiable("StopGradient")


def identity(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return _create("Identity", [t], {"T": t.dtype}, name or "Identity").outputs[0]


def stop_gradient(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return _create("StopGradient", [t], {"T": t.dtype}, name or "StopGradient").outputs[0]


# ---- Fill, zeros, ones -------------------------------------------------------------------
def shape_value(t: Tensor) -> TensorShape:
    """The static shape that shape tensor ``t`` holds, as far as known: the input's shape
    for ``Shape(x)`` (TF's constant_value_as_shape), else unknown of ``t``'s length."""
    if t.op.type == "Shape":
        return t.op.inputs[0].shape
    return unknown_shape(t.shape.dims[0] if t.shape.dims else None)


def _fill_shape(op):
    dims = const_value(op.inputs[0])
    value = op.inputs[1]
    if dims is None:
        return [(value.dtype, shape_value(op.inputs[0]))]
    return [(value.dtype, TensorShape([int(d) for d in np.atleast_1d(dims)] if np.ndim(dims) else []))]


def _fill_kernel(ctx, dims, value):
    return ctx.xp.full(tuple(int(d) for d in np.atleast_1d(ctx.device.to_host(dims))), value,
                       dtype=ctx.attrs["T"].np)


register_op("Fill", _fill_shape, _fill_kernel)


def _fill_grad(op, grad):
    from tfteach.ops.math_ops import reduce_sum
    return [None, reduce_sum(grad)]


set_gradient("Fill", _fill_grad)


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    g = graph_of([dims, value])
    with g.as_default():
        d = convert_to_tensor(dims, dtype=dtypes.int32, name="dims")
        v = convert_to_tensor(value, name="value")
    return _create("Fill", [d, v], {"T": v.dtype}, name or "Fill").outputs[0]


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, 0, name or "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, 1, name or "ones")


def _filled(shape: Any, dtype: Any, value: int, name: str) -> Tensor:
    dt = dtypes.as_dtype(dtype)
    g = get_default_graph()
    with g.name_scope(name) as scope:
        if isinstance(shape, Tensor):
            return fill(shape, np.array(value, dt.np), name=scope)
        return constant(value, dtype=dt, shape=list(as_shape(shape).as_list()), name=scope)


register_op("ZerosLike", same_shape_fn, lambda ctx, x: ctx.xp.zeros_like(x))
register_op("OnesLike", same_shape_fn, lambda ctx, x: ctx.xp.ones_like(x))
not_differentiable("ZerosLike", "OnesLike")


def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    t = convert_to_tensor(tensor)
    return _create("ZerosLike", [t], {"T": t.dtype}, name or "zeros_like").outputs[0]


def ones_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    t = convert_to_tensor(tensor)
    return _create("OnesLike", [t], {"T": t.dtype}, name or "ones_like").outputs[0]


# ---- Shape, Size, Rank (host-memory outputs) -----------------------------------------------
register_op("Shape", lambda op: [(dtypes.int32, TensorShape([op.inputs[0].shape.ndims]))],
            lambda ctx, x: np.array(x.shape, dtype=np.int32), host_kernel=True)
register_op("Size", lambda op: [(dtypes.int32, TensorShape([]))],
            lambda ctx, x: np.array(x.size, dtype=np.int32), host_kernel=True)
register_op("Rank", lambda op: [(dtypes.int32, TensorShape([]))],
            lambda ctx, x: np.array(x.ndim, dtype=np.int32), host_kernel=True)
not_differentiable("Shape", "Size", "Rank")


def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    t = convert_to_tensor(input)
    return _create("Shape", [t], {"T": t.dtype}, name or "Shape").outputs[0]


def size(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return _create("Size", [t], {"T": t.dtype}, name or "Size").outputs[0]


def rank(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return _create("Rank", [t], {"T": t.dtype}, name or "Rank").outputs[0]


# ---- Reshape -------------------------------------------------------------------------------
def _reshape_shape(op):
    x, s = op.inputs
    target = const_value(s)
    if target is None:
        return [(x.dtype, shape_value(s))]
    target = [int(d) for d in np.atleast_1d(target)] if np.ndim(target) else []
    n = x.shape.num_elements()
    if -1 in target and n is not None:
        known = int(np.prod([d for d in target if d != -1])) or 1
        if n % known:
            raise shape_error(op, f"Cannot reshape a tensor with {n} elements to shape "
                                  f"{target}")
        target = [n // known if d == -1 else d for d in target]
    elif n is not None and int(np.prod(target)) != n:
        raise shape_error(op, f"Cannot reshape a tensor with {n} elements to shape "
                              f"[{','.join(map(str, target))}] ({int(np.prod(target))} elements)")
    return [(x.dtype, TensorShape([None if d == -1 else d for d in target]))]


def _reshape_kernel(ctx, x, s):
    target = tuple(int(d) for d in np.atleast_1d(ctx.device.to_host(s)))
    known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
    if (known != x.size) if -1 not in target else (known == 0 or x.size % known):
        from tfteach.errors import InvalidArgumentError
        wanted = f"requires a multiple of {known}" if -1 in target else f"has {known}"
        raise InvalidArgumentError(
            f"Input to reshape is a tensor with {x.size} values, but the requested shape "
            f"{wanted}\n\t [[Node: {ctx.op.summary()}]]", op=ctx.op,
            hint=f"the shape [{', '.join(map(str, target))}] must hold exactly the input's "
                 f"{x.size} values (use -1 for one dimension to have it computed); check the "
                 "batch size of what you feed.")
    return x.reshape(target)


register_op("Reshape", _reshape_shape, _reshape_kernel, gpu_types=ALL_TYPES)


def shape_of(t: Tensor) -> Any:
    """``t``'s shape: a constant list when fully known, else a ``Shape`` op (for gradients)."""
    if t.shape.is_fully_defined():
        return t.shape.as_list()
    return shape(t)


def _reshape_grad(op, grad):
    return [reshape(grad, shape_of(op.inputs[0])), None]


set_gradient("Reshape", _reshape_grad)


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(tensor)
    with t.graph.as_default():
        s = convert_to_tensor(shape, dtype=dtypes.int32, name="Reshape/shape" if name is None
                              else f"{name}/shape")
    return _create("Reshape", [t, s], {"T": t.dtype}, name or "Reshape").outputs[0]


# ---- Transpose -----------------------------------------------------------------------------
def _transpose_shape(op):
    x, p = op.inputs
    perm = const_value(p)
    if perm is None or x.shape.dims is None:
        return [(x.dtype, unknown_shape(x.shape.ndims))]
    if sorted(int(i) for i in perm) != list(range(x.shape.ndims)):
        raise shape_error(op, f"Dimension must be {x.shape.ndims} but is {len(perm)}")
    return [(x.dtype, TensorShape([x.shape.dims[int(i)] for i in perm]))]


register_op("Transpose", _transpose_shape,
            lambda ctx, x, p: ctx.xp.transpose(x, tuple(int(i) for i in ctx.device.to_host(p))))


def _transpose_grad(op, grad):
    perm = const_value(op.inputs[1])
    inverse = (np.argsort(perm).astype(np.int32) if perm is not None
               else invert_permutation(op.inputs[1]))
    return [transpose(grad, inverse), None]


set_gradient("Transpose", _transpose_grad)

register_op("InvertPermutation", same_shape_fn,
            lambda ctx, p: np.argsort(ctx.device.to_host(p)).astype(np.int32), host_kernel=True)
not_differentiable("InvertPermutation")


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(x, dtype=dtypes.int32)
    return _create("InvertPermutation", [t], {"T": t.dtype}, name or "InvertPermutation").outputs[0]


def transpose(a: Any, perm: Any = None, name: str = "transpose") -> Tensor:
    t = convert_to_tensor(a)
    if perm is None:
        if t.shape.ndims is None:
            raise ValueError("transpose without perm needs a tensor of known rank.")
        perm = list(range(t.shape.ndims))[::-1]
    with t.graph.as_default(), t.graph.name_scope(name) as scope:
        p = convert_to_tensor(perm, dtype=dtypes.int32, name="perm")
        return _create("Transpose", [t, p], {"T": t.dtype}, scope[:-1] + "/").outputs[0]


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
    return [(dt, TensorShape(out))]


register_op("ConcatV2", _concat_shape,
            lambda ctx, *xs: ctx.xp.concatenate(xs[:-1], axis=int(ctx.device.to_host(xs[-1]))))


def _concat_grad(op, grad):
    """Each input's slice of ``grad``, at offsets from ``ConcatOffset`` (as TF does)."""
    *values, axis = op.inputs
    shapes = [shape(v) for v in values]
    offsets = op.graph.create_op("ConcatOffset", [axis] + shapes, {"N": len(values)},
                                 name="ConcatOffset").outputs
    return [slice_(grad, o, s) for o, s in zip(offsets, shapes, strict=True)] + [None]


set_gradient("ConcatV2", _concat_grad)


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
            _concat_offset_kernel, host_kernel=True)
not_differentiable("ConcatOffset")


def concat(values: list, axis: int, name: str = "concat") -> Tensor:
    ts = [convert_to_tensor(v) for v in values]
    same_dtype("ConcatV2", ts, "values")
    if len(ts) == 1:
        return identity(ts[0], name=name)
    with ts[0].graph.as_default(), ts[0].graph.name_scope(name) as scope:
        ax = convert_to_tensor(axis, dtype=dtypes.int32, name="axis")
        return _create("ConcatV2", ts + [ax], {"T": ts[0].dtype, "N": len(ts)},
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
set_gradient("Split", lambda op, *grads: [None, concat(list(grads), op.inputs[0])])


def split(value: Any, num_or_size_splits: int, axis: int = 0, name: str = "split") -> list:
    t = convert_to_tensor(value)
    if not isinstance(num_or_size_splits, int):
        raise NotImplementedError("tfteach's split takes a number of equal splits.")
    with t.graph.as_default():
        ax = convert_to_tensor(axis, dtype=dtypes.int32, name="split/split_dim")
    return list(_create("Split", [ax, t], {"T": t.dtype, "num_split": num_or_size_splits},
                        name).outputs)


# ---- Cast ----------------------------------------------------------------------------------
def _cast_kernel(ctx, x):
    return x.astype(ctx.attrs["DstT"].np)


register_op("Cast", lambda op: [(op.attrs["DstT"], op.inputs[0].shape)], _cast_kernel,
            dtype_attr="SrcT")


def _cast_grad(op, grad):
    if op.attrs["SrcT"].is_floating and op.attrs["DstT"].is_floating:
        return [cast(grad, op.attrs["SrcT"])]
    return [None]


set_gradient("Cast", _cast_grad)


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(x)
    dt = dtypes.as_dtype(dtype)
    if t.dtype is dt:
        return t
    return _create("Cast", [t], {"SrcT": t.dtype, "DstT": dt}, name or "Cast").outputs[0]


def to_float(x: Any, name: str = "ToFloat") -> Tensor:
    return cast(x, dtypes.float32, name=name)


# ---- ExpandDims, Squeeze, Pack, Tile ----------------------------------------------------
def _expand_shape(op):
    x, a = op.inputs
    axis = const_value(a)
    if axis is None or x.shape.dims is None:
        return [(x.dtype, unknown_shape())]
    dims = list(x.shape.dims)
    ax = int(axis) if int(axis) >= 0 else len(dims) + 1 + int(axis)
    dims.insert(ax, 1)
    return [(x.dtype, TensorShape(dims))]


def _expand_dims_kernel(ctx, x, a):
    axis = int(ctx.device.to_host(a))
    axis = axis + x.ndim + 1 if axis < 0 else axis
    return x.reshape(x.shape[:axis] + (1,) + x.shape[axis:])


register_op("ExpandDims", _expand_shape, _expand_dims_kernel, gpu_types=ALL_TYPES)
set_gradient("ExpandDims", lambda op, grad: [reshape(grad, shape_of(op.inputs[0])), None])


def expand_dims(input: Any, axis: int, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    with t.graph.as_default():
        a = convert_to_tensor(axis, dtype=dtypes.int32, name=f"{name or 'ExpandDims'}/dim")
    return _create("ExpandDims", [t, a], {"T": t.dtype}, name or "ExpandDims").outputs[0]


def _squeeze_shape(op):
    x = op.inputs[0]
    if x.shape.dims is None:
        return [(x.dtype, unknown_shape())]
    axes = op.attrs["squeeze_dims"] or [i for i, d in enumerate(x.shape.dims) if d == 1]
    axes = axis_list(axes, x.shape.ndims)
    return [(x.dtype, TensorShape([d for i, d in enumerate(x.shape.dims) if i not in axes]))]


register_op("Squeeze", _squeeze_shape,
            lambda ctx, x: ctx.xp.squeeze(x, axis=tuple(ctx.attrs["squeeze_dims"]) or None),
            gpu_types=ALL_TYPES)
set_gradient("Squeeze", lambda op, grad: [reshape(grad, shape_of(op.inputs[0]))])


def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    axes = [] if axis is None else list(np.atleast_1d(axis))
    return _create("Squeeze", [t], {"T": t.dtype, "squeeze_dims": axes},
                   name or "Squeeze").outputs[0]


def _pack_shape(op):
    first = op.inputs[0]
    if first.shape.dims is None:
        return [(first.dtype, unknown_shape())]
    dims = list(first.shape.dims)
    ax = op.attrs["axis"] if op.attrs["axis"] >= 0 else len(dims) + 1 + op.attrs["axis"]
    dims.insert(ax, len(op.inputs))
    return [(first.dtype, TensorShape(dims))]


register_op("Pack", _pack_shape, lambda ctx, *xs: ctx.xp.stack(xs, axis=ctx.attrs["axis"]))
set_gradient("Pack", lambda op, grad: unstack(grad, num=len(op.inputs), axis=op.attrs["axis"]))


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
set_gradient("Unpack", lambda op, *grads: [stack(list(grads), axis=op.attrs["axis"])])


def unstack(value: Any, num: int | None = None, axis: int = 0, name: str = "unstack") -> list:
    """Split ``value`` along ``axis`` into ``num`` tensors of one rank less."""
    t = convert_to_tensor(value)
    if num is None:
        num = t.shape.dims[axis] if t.shape.dims is not None else None
        if num is None:
            raise ValueError(f"Cannot infer num from shape {t.shape}")
    return list(_create("Unpack", [t], {"T": t.dtype, "num": num, "axis": axis}, name).outputs)


def stack(values: list, axis: int = 0, name: str = "stack") -> Tensor:
    ts = [convert_to_tensor(v) for v in values]
    same_dtype("Pack", ts, "values")
    return _create("Pack", ts, {"T": ts[0].dtype, "N": len(ts), "axis": axis}, name).outputs[0]


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


register_op("Tile", _tile_shape,
            lambda ctx, x, m: ctx.xp.tile(x, tuple(int(k) for k in ctx.device.to_host(m))))


def _tile_grad(op, grad):
    """Sum the tiles: view grad as [m0, d0, m1, d1, ...] and sum the m axes (TF's way)."""
    from tfteach.ops.math_ops import reduce_sum
    x, multiples = op.inputs
    split_shape = reshape(transpose(stack([multiples, shape(x)])), [-1])
    axes = range_(0, size(split_shape), 2)
    return [reduce_sum(reshape(grad, split_shape), axes), None]


set_gradient("Tile", _tile_grad)


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    with t.graph.as_default():
        m = convert_to_tensor(multiples, dtype=dtypes.int32, name=f"{name or 'Tile'}/multiples")
    return _create("Tile", [t, m], {"T": t.dtype}, name or "Tile").outputs[0]


# ---- Range ---------------------------------------------------------------------------------
def _range_shape(op):
    s, l, d = (const_value(t) for t in op.inputs)
    dt = op.inputs[0].dtype
    if s is None or l is None or d is None:
        return [(dt, unknown_shape(1))]
    return [(dt, TensorShape([len(np.arange(s, l, d))]))]


register_op("Range", _range_shape,
            lambda ctx, s, l, d: np.arange(s, l, d, dtype=ctx.attrs["Tidx"].np),
            dtype_attr="Tidx", host_kernel=True)
not_differentiable("Range")


def range_(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,
           name: str = "range") -> Tensor:
    """``tf.range``: like Python's range, as a tensor."""
    if limit is None:
        start, limit = 0, start
    g = graph_of([start, limit, delta])
    with g.as_default(), g.name_scope(name) as scope:
        dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.int32
        ts = [convert_to_tensor(v, dtype=dt, name=n) for v, n in
              ((start, "start"), (limit, "limit"), (delta, "delta"))]
        return g.create_op("Range", ts, {"Tidx": dt}, name=scope).outputs[0]


def range_to_rank(t: Tensor) -> Tensor:
    """All axes of ``t`` as a tensor, for reductions over a tensor of unknown rank."""
    return range_(0, rank(t), 1)


# ---- Slice and Pad (each other's gradient) ------------------------------------------------
def _host_ints(ctx, t) -> list[int]:
    values = ctx.device.to_host(t).tolist()
    return values if isinstance(values, list) else [values]


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
    b, sz = _host_ints(ctx, begin), _host_ints(ctx, size_t)
    if not len(b) == len(sz) == x.ndim:
        raise errors.InvalidArgumentError(
            f"Expected begin and size arguments to be 1-D tensors of size {x.ndim}, but got "
            f"shapes [{len(b)}] and [{len(sz)}] instead.", op=ctx.op,
            hint="give one begin and one size per axis of the input.")
    index = tuple(builtins.slice(b, None if s == -1 else b + s)
                  for b, s in zip(b, sz, strict=True))
    return x[index]


register_op("Slice", _slice_shape, _slice_kernel, gpu_types=ALL_TYPES)


def _slice_grad(op, grad):
    from tfteach.ops.math_ops import subtract
    x, begin, _ = op.inputs
    after = subtract(subtract(shape(x), shape(op.outputs[0])), begin)
    return [pad(grad, stack([begin, after], axis=1)), None, None]


set_gradient("Slice", _slice_grad)


def slice_(input_: Any, begin: Any, size: Any, name: str | None = None) -> Tensor:
    """``tf.slice``: ``size[i]`` elements from ``begin[i]`` along each axis (-1: to the end)."""
    t = convert_to_tensor(input_)
    with t.graph.as_default():
        b = convert_to_tensor(begin, dtype=dtypes.int32, name="begin")
        s = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    return _create("Slice", [t, b, s], {"T": t.dtype, "Index": dtypes.int32},
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


def _pad_grad(op, grad):
    x, paddings = op.inputs
    p = const_value(paddings)
    if p is not None:
        begin: Any = np.asarray(p, dtype=np.int32)[:, 0]
    else:
        begin = reshape(slice_(paddings, [0, 0], [-1, 1]), [-1])
    return [slice_(grad, begin, shape_of(x)), None]


set_gradient("Pad", _pad_grad)


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", name: str | None = None) -> Tensor:
    """Zeros around ``tensor``: ``paddings[i] = [before, after]`` for axis i."""
    if mode.upper() != "CONSTANT":
        raise NotImplementedError("tfteach's pad supports mode='CONSTANT' only.")
    t = convert_to_tensor(tensor)
    with t.graph.as_default():
        p = convert_to_tensor(paddings, dtype=dtypes.int32, name="paddings")
    return _create("Pad", [t, p], {"T": t.dtype, "Tpaddings": dtypes.int32},
                   name or "Pad").outputs[0]


# ---- broadcasting --------------------------------------------------------------------------
def _broadcast_to_shape(op):
    x, s = op.inputs
    target = const_value(s)
    if target is None:
        return [(x.dtype, shape_value(s))]
    return [(x.dtype, TensorShape([int(d) for d in np.atleast_1d(target)]))]


def _broadcast_to_kernel(ctx, x, s):
    out = ctx.xp.empty(tuple(_host_ints(ctx, s)), dtype=x.dtype)
    out[...] = x
    return out


register_op("BroadcastTo", _broadcast_to_shape, _broadcast_to_kernel)


def _broadcast_to_grad(op, grad):
    from tfteach.ops.math_ops import sum_to
    return [sum_to(grad, op.inputs[0], op.outputs[0]), None]


set_gradient("BroadcastTo", _broadcast_to_grad)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """``input`` repeated along axes of size 1 (and new leading axes) to ``shape``."""
    t = convert_to_tensor(input)
    with t.graph.as_default():
        s = convert_to_tensor(shape, dtype=dtypes.int32, name="shape")
    return _create("BroadcastTo", [t, s], {"T": t.dtype, "Tidx": dtypes.int32},
                   name or "BroadcastTo").outputs[0]


def _broadcast_gradient_args_kernel(ctx, s0, s1):
    """The axes each side was broadcast along (summing the gradient there undoes it)."""
    a, b = _host_ints(ctx, s0), _host_ints(ctx, s1)
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    for i in range(n):
        if a[i] != b[i] and 1 not in (a[i], b[i]):
            from tfteach.errors import InvalidArgumentError
            raise InvalidArgumentError(f"Incompatible shapes: {a} vs. {b}", op=ctx.op,
                                       hint="the two operands must broadcast against each other.")
    r0 = [i for i in range(n) if a[i] == 1 and b[i] != 1]
    r1 = [i for i in range(n) if b[i] == 1 and a[i] != 1]
    return np.array(r0, dtype=np.int32), np.array(r1, dtype=np.int32)


register_op("BroadcastGradientArgs",
            lambda op: [(dtypes.int32, TensorShape([None]))] * 2,
            _broadcast_gradient_args_kernel, host_kernel=True)
not_differentiable("BroadcastGradientArgs")


def broadcast_gradient_args(s0: Any, s1: Any, name: str | None = None) -> tuple:
    a, b = convert_to_tensor(s0), convert_to_tensor(s1)
    op = _create("BroadcastGradientArgs", [a, b], {"T": dtypes.int32},
                 name or "BroadcastGradientArgs")
    return op.outputs[0], op.outputs[1]


# ---- OneHot ----------------------------------------------------------------------------------
def _one_hot_shape(op):
    indices = op.inputs[0]
    depth = int(op.attrs["depth"])
    dims = None if indices.shape.dims is None else list(indices.shape.dims) + [depth]
    return [(op.attrs["dtype"], TensorShape(dims) if dims is not None else unknown_shape())]


def _one_hot_kernel(ctx, indices, on, off):
    xp, depth = ctx.xp, ctx.attrs["depth"]
    hot = indices[..., None] == xp.arange(depth)
    return xp.where(hot, on, off).astype(ctx.attrs["dtype"].np, copy=False)


register_op("OneHot", _one_hot_shape, _one_hot_kernel, dtype_attr="dtype")
not_differentiable("OneHot")


def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None,
            axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """Class indices [n] -> one-hot rows [n, depth] (``on_value`` at the index, else ``off``)."""
    if axis not in (None, -1):
        raise NotImplementedError("tfteach's one_hot puts the new axis last (axis=-1).")
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.float32
    t = convert_to_tensor(indices)
    with t.graph.as_default(), t.graph.name_scope(name or "one_hot") as scope:
        on = convert_to_tensor(1 if on_value is None else on_value, dtype=dt, name="on_value")
        off = convert_to_tensor(0 if off_value is None else off_value, dtype=dt,
                                name="off_value")
        return t.graph.create_op("OneHot", [t, on, off], {"depth": int(depth), "dtype": dt,
                                 "T": dt, "TI": t.dtype}, name=scope).outputs[0]
