"""Array ops: creation, shape and type changes. Each op is registered once with its shape
function and its kernel (against ``xp``); their gradients are in ``array_grad``. Ops: Placeholder,
PlaceholderWithDefault, Identity, StopGradient, Fill, ZerosLike, OnesLike, Shape, Size, Rank,
Reshape, Transpose, InvertPermutation, Cast, ExpandDims, Squeeze, Range, BroadcastTo,
BroadcastGradientArgs, OneHot. ``constant`` (``constant_op``) and the joining and cutting ops
of ``manip_ops`` (concat, split, stack, unstack, tile, slice_, pad) are importable from here
too, as in TF.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.registry import ALL_TYPES, register_op
from tfteach.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.allocation import (element_count, guard_allocation, no_negative_dimension,
                                    shape_dtype, shape_vector)
from tfteach.ops.common import (axis_list, const_value, convert_to_tensor, create_op, graph_of,
                                holds_tensor, host_ints, same_shape_fn, shape_error)
from tfteach.ops.constant_op import constant
from tfteach.ops.manip_ops import (concat as concat, pad as pad, slice_ as slice_,
                                   split as split, stack as stack, tile as tile,
                                   unstack as unstack)
from tfteach.ops.range_ops import range_ as range_


# ---- Placeholder ---------------------------------------------------------------------------
def _placeholder_shape(op):
    known = [d for d in op.attrs["shape"].dims or [] if d is not None]
    element_count(op, known, "is too large (more than 2**63 - 1 entries)", building=True)
    return [(op.attrs["dtype"], op.attrs["shape"])]


def _placeholder_kernel(ctx):
    from tfteach.errors import InvalidArgumentError
    op = ctx.op
    raise InvalidArgumentError(
        f"You must feed a value for placeholder tensor '{op.name}' with dtype "
        f"{op.attrs['dtype'].tf_name} and shape {op.attrs['shape'].bracket()}\n"
        f"\t [[Node: {op.summary()}]]", op=op,
        hint=tr("pass feed_dict={{{name}: value}} to Session.run (a value of shape {shape}, "
                "dtype {dtype}).", name=op.name.split("/")[-1],
                shape=op.attrs["shape"].bracket(), dtype=op.attrs["dtype"].name))


register_op("Placeholder", _placeholder_shape, _placeholder_kernel, gpu_types=ALL_TYPES,
            dtype_attr="dtype", copyable=True, idle=True)


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A value that must be fed at run time."""
    dt = dtypes.as_dtype(dtype)
    sh = unknown_shape() if shape is None else as_shape(shape)
    return get_default_graph().create_op("Placeholder", [], {"dtype": dt, "shape": sh},
                                         name=name or "Placeholder").outputs[0]


register_op("PlaceholderWithDefault", lambda op: [(op.inputs[0].dtype, op.attrs["shape"])],
            lambda ctx, x: x, gpu_types=ALL_TYPES, dtype_attr="dtype")


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return create_op("PlaceholderWithDefault", [t], {"dtype": t.dtype, "shape": as_shape(shape)},
                   name or "PlaceholderWithDefault").outputs[0]


# ---- Identity, StopGradient --------------------------------------------------------------
register_op("Identity", same_shape_fn, lambda ctx, x: x, gpu_types=ALL_TYPES, idle=True)
register_op("StopGradient", same_shape_fn, lambda ctx, x: x, gpu_types=ALL_TYPES)


def identity(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return create_op("Identity", [t], {"T": t.dtype}, name or "Identity").outputs[0]


def stop_gradient(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return create_op("StopGradient", [t], {"T": t.dtype}, name or "StopGradient").outputs[0]


# ---- Fill, zeros, ones -------------------------------------------------------------------
def shape_value(t: Tensor) -> TensorShape:
    """The static shape that shape tensor ``t`` holds, as far as known: the input's shape
    for ``Shape(x)``, the constant items of a ``Pack`` (TF's constant_value_as_shape), else
    unknown of ``t``'s length."""
    if t.op.type == "Shape":
        return t.op.inputs[0].shape
    if t.op.type == "Pack" and t.shape.ndims == 1:
        values = [const_value(i.op.inputs[0] if i.op.type == "Cast" else i)
                  for i in t.op.inputs]
        return TensorShape([None if v is None or v < 0 else int(v) for v in values])
    return unknown_shape(t.shape.dims[0] if t.shape.dims else None)


def _fill_shape(op):
    dims = const_value(op.inputs[0])
    value = op.inputs[1]
    if dims is None:
        return [(value.dtype, shape_value(op.inputs[0]))]
    if np.any(np.asarray(dims) < 0):
        raise shape_error(op, "Fill dimensions must be >= 0")
    return [(value.dtype, TensorShape([int(d) for d in np.atleast_1d(dims)] if np.ndim(dims) else []))]


def _fill_kernel(ctx, dims, value):
    shape = tuple(int(d) for d in np.atleast_1d(ctx.device.to_host(dims)))
    no_negative_dimension(ctx.op, shape)
    element_count(ctx.op, shape, "would have more than 2**63 - 1 elements")
    guard_allocation(ctx, shape, ctx.attrs["T"])
    return ctx.xp.full(shape, value, dtype=ctx.attrs["T"].np)


register_op("Fill", _fill_shape, _fill_kernel)


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` (a list of ints and scalar tensors, or a shape tensor)
    filled with ``value``."""
    g = graph_of([dims, value])
    with g.as_default(), g.name_scope(name or "Fill") as scope:
        d = convert_to_tensor(dims, dtype=shape_dtype(dims), name="dims")
        v = convert_to_tensor(value, name="value")
        return create_op("Fill", [d, v], {"T": v.dtype}, scope).outputs[0]


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, 0, name or "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, 1, name or "ones")


def _filled(shape: Any, dtype: Any, value: int, name: str) -> Tensor:
    """TF's zeros/ones: a Const when the shape is Python numbers of under 1000 elements,
    else a Fill of the shape tensor (or of the packed list of ints and tensors). A Fill of a
    Python shape keeps tfteach's input names ``dims``/``value`` (TF's: ``shape_as_tensor``,
    ``Const``), which the lessons' stored placements show."""
    dt = dtypes.as_dtype(dtype)
    g = graph_of([shape])
    with g.as_default(), g.name_scope(name) as scope:
        if isinstance(shape, (list, tuple)) and holds_tensor(shape):
            shape = convert_to_tensor(shape, dtype=dtypes.int32)
        elif not isinstance(shape, Tensor):
            if (as_shape(shape).num_elements() or 0) < 1000:
                return constant(value, dtype=dt, shape=as_shape(shape).as_list(), name=scope)
            return fill(as_shape(shape).as_list(), np.array(value, dt.np), name=scope)
        return fill(shape, constant(value, dtype=dt, name="Const"), name=scope)


register_op("ZerosLike", same_shape_fn, lambda ctx, x: ctx.xp.zeros_like(x))
register_op("OnesLike", same_shape_fn, lambda ctx, x: ctx.xp.ones_like(x))


def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    t = convert_to_tensor(tensor)
    return create_op("ZerosLike", [t], {"T": t.dtype}, name or "zeros_like").outputs[0]


def ones_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    t = convert_to_tensor(tensor)
    return create_op("OnesLike", [t], {"T": t.dtype}, name or "ones_like").outputs[0]


# ---- Shape, Size, Rank (host-memory outputs) -----------------------------------------------
register_op("Shape", lambda op: [(op.attrs.get("out_type", dtypes.int32),
                                  TensorShape([op.inputs[0].shape.ndims]))],
            lambda ctx, x: shape_vector(ctx, x.shape))
register_op("Size", lambda op: [(dtypes.int32, TensorShape([]))],
            lambda ctx, x: np.array(x.size, dtype=np.int32))
register_op("Rank", lambda op: [(dtypes.int32, TensorShape([]))],
            lambda ctx, x: np.array(x.ndim, dtype=np.int32))


def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:
    t = convert_to_tensor(input)
    return create_op("Shape", [t], {"T": t.dtype, "out_type": dtypes.as_dtype(out_type)},
                     name or "Shape").outputs[0]


def size(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return create_op("Size", [t], {"T": t.dtype}, name or "Size").outputs[0]


def rank(input: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    return create_op("Rank", [t], {"T": t.dtype}, name or "Rank").outputs[0]


# ---- Reshape -------------------------------------------------------------------------------
def _reshape_shape(op):
    x, s = op.inputs
    target = const_value(s)
    if target is None:
        return [(x.dtype, shape_value(s))]
    target = [int(d) for d in np.atleast_1d(target)] if np.ndim(target) else []
    n, count = x.shape.num_elements(), element_count(op, target, "has too many elements", True)
    if -1 in target and n is not None:
        known = count or 1
        if n % known:
            raise shape_error(op, f"Cannot reshape a tensor with {n} elements to shape "
                                  f"{target}")
        target = [n // known if d == -1 else d for d in target]
    elif n is not None and count != n:
        raise shape_error(op, f"Cannot reshape a tensor with {n} elements to shape "
                              f"[{','.join(map(str, target))}] ({count} elements)")
    return [(x.dtype, TensorShape([None if d == -1 else d for d in target]))]


def _reshape_kernel(ctx, x, s):
    target = tuple(int(d) for d in np.atleast_1d(ctx.device.to_host(s)))
    known = element_count(ctx.op, target, "has too many elements")
    if (known != x.size) if -1 not in target else (known == 0 or x.size % known):
        from tfteach.errors import InvalidArgumentError
        wanted = f"requires a multiple of {known}" if -1 in target else f"has {known}"
        raise InvalidArgumentError(
            f"Input to reshape is a tensor with {x.size} values, but the requested shape "
            f"{wanted}\n\t [[Node: {ctx.op.summary()}]]", op=ctx.op,
            hint=tr("the shape [{shape}] must hold exactly the input's {size} values (use -1 "
                    "for one dimension to have it computed); check the batch size of what you "
                    "feed.", shape=", ".join(map(str, target)), size=x.size))
    return x.reshape(target)


register_op("Reshape", _reshape_shape, _reshape_kernel, gpu_types=ALL_TYPES)


def shape_of(t: Tensor) -> Any:
    """``t``'s shape: a constant list when fully known, else a ``Shape`` op (for gradients)."""
    if t.shape.is_fully_defined():
        return t.shape.as_list()
    return shape(t)


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(tensor)
    with t.graph.as_default():
        s = convert_to_tensor(shape, dtype=shape_dtype(shape), name="Reshape/shape"
                              if name is None else f"{name}/shape")
    return create_op("Reshape", [t, s], {"T": t.dtype}, name or "Reshape").outputs[0]


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


register_op("InvertPermutation", same_shape_fn,
            lambda ctx, p: np.argsort(ctx.device.to_host(p)).astype(np.int32))


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(x, dtype=dtypes.int32)
    return create_op("InvertPermutation", [t], {"T": t.dtype}, name or "InvertPermutation").outputs[0]


def transpose(a: Any, perm: Any = None, name: str = "transpose") -> Tensor:
    t = convert_to_tensor(a)
    if perm is None:
        if t.shape.ndims is None:
            raise ValueError("transpose without perm needs a tensor of known rank.")
        perm = list(range(t.shape.ndims))[::-1]
    with t.graph.as_default(), t.graph.name_scope(name) as scope:
        p = convert_to_tensor(perm, dtype=dtypes.int32, name="perm")
        return create_op("Transpose", [t, p], {"T": t.dtype}, scope[:-1] + "/").outputs[0]


# ---- Cast ----------------------------------------------------------------------------------
def _cast_kernel(ctx, x):
    return x.astype(ctx.attrs["DstT"].np)


register_op("Cast", lambda op: [(op.attrs["DstT"], op.inputs[0].shape)], _cast_kernel,
            dtype_attr="SrcT")


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    t = convert_to_tensor(x)
    dt = dtypes.as_dtype(dtype)
    if t.dtype is dt:
        return t
    return create_op("Cast", [t], {"SrcT": t.dtype, "DstT": dt}, name or "Cast").outputs[0]


def to_float(x: Any, name: str = "ToFloat") -> Tensor:
    return cast(x, dtypes.float32, name=name)


# ---- ExpandDims, Squeeze ---------------------------------------------------------------------
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


def expand_dims(input: Any, axis: int, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    with t.graph.as_default():
        a = convert_to_tensor(axis, dtype=dtypes.int32, name=f"{name or 'ExpandDims'}/dim")
    return create_op("ExpandDims", [t, a], {"T": t.dtype}, name or "ExpandDims").outputs[0]


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


def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Tensor:
    t = convert_to_tensor(input)
    axes = [] if axis is None else list(np.atleast_1d(axis))
    return create_op("Squeeze", [t], {"T": t.dtype, "squeeze_dims": axes},
                   name or "Squeeze").outputs[0]


# ---- Range: range_ops ----------------------------------------------------------------
def range_to_rank(t: Tensor) -> Tensor:
    """All axes of ``t`` as a tensor, for reductions over a tensor of unknown rank."""
    return range_(0, rank(t), 1)


# ---- broadcasting --------------------------------------------------------------------------
def _broadcast_to_shape(op):
    x, s = op.inputs
    target = const_value(s)
    if target is None:
        return [(x.dtype, shape_value(s))]
    return [(x.dtype, TensorShape([int(d) for d in np.atleast_1d(target)]))]


def _broadcast_to_kernel(ctx, x, s):
    dims = host_ints(ctx, s)
    element_count(ctx.op, dims, "would have more than 2**63 - 1 elements")
    out = ctx.xp.empty(tuple(dims), dtype=x.dtype)
    out[...] = x
    return out


register_op("BroadcastTo", _broadcast_to_shape, _broadcast_to_kernel)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:
    """``input`` repeated along axes of size 1 (and new leading axes) to ``shape``."""
    t = convert_to_tensor(input)
    with t.graph.as_default():
        s = convert_to_tensor(shape, dtype=shape_dtype(shape), name="shape")
    return create_op("BroadcastTo", [t, s], {"T": t.dtype, "Tidx": s.dtype},
                   name or "BroadcastTo").outputs[0]


def _broadcast_gradient_args_kernel(ctx, s0, s1):
    """The axes each side was broadcast along (summing the gradient there undoes it)."""
    a, b = host_ints(ctx, s0), host_ints(ctx, s1)
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + a, [1] * (n - len(b)) + b
    for i in range(n):
        if a[i] != b[i] and 1 not in (a[i], b[i]):
            from tfteach.errors import InvalidArgumentError
            raise InvalidArgumentError(f"Incompatible shapes: {a} vs. {b}", op=ctx.op,
                                       hint=tr("the two operands must broadcast against "
                                               "each other."))
    r0 = [i for i in range(n) if a[i] == 1 and b[i] != 1]
    r1 = [i for i in range(n) if b[i] == 1 and a[i] != 1]
    return np.array(r0, dtype=np.int32), np.array(r1, dtype=np.int32)


register_op("BroadcastGradientArgs",
            lambda op: [(dtypes.int32, TensorShape([None]))] * 2,
            _broadcast_gradient_args_kernel)


def broadcast_gradient_args(s0: Any, s1: Any, name: str | None = None) -> tuple:
    a, b = convert_to_tensor(s0), convert_to_tensor(s1)
    op = create_op("BroadcastGradientArgs", [a, b], {"T": dtypes.int32},
                 name or "BroadcastGradientArgs")
    return op.outputs[0], op.outputs[1]


# ---- OneHot ----------------------------------------------------------------------------------
def _one_hot_shape(op):
    indices = op.inputs[0]
    depth = int(op.attrs["depth"])
    dims = None if indices.shape.dims is None else list(indices.shape.dims) + [depth]
    return [(op.attrs["dtype"], TensorShape(dims) if dims is not None else unknown_shape())]


def _one_hot_kernel(ctx, indices, on, off):
    guard_allocation(ctx, (*indices.shape, ctx.attrs["depth"]), ctx.attrs["dtype"],
                     (indices.size + 8) * ctx.attrs["depth"])  # the mask and the arange
    hot = indices[..., None] == ctx.xp.arange(ctx.attrs["depth"])
    return ctx.xp.where(hot, on, off).astype(ctx.attrs["dtype"].np, copy=False)


register_op("OneHot", _one_hot_shape, _one_hot_kernel, dtype_attr="dtype")


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
