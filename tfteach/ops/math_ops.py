"""Math ops: elementwise arithmetic, matmul, add_n, reductions, comparisons and select.

Elementwise ops are data: ``_BINARY``, ``_COMPARE`` and ``_UNARY`` map TF op types to their
kernels, and one loop registers them all with the broadcasting (or same-shape) shape
function. The gradients are in ``math_grad`` (TF's split). The Python operators of ``Tensor``
(``+ - * / @ -x < <= > >=``) are installed here, with TF 1.x's op names (``a + b`` makes
an op named ``add`` of type ``Add``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, register_operator
from tfteach.framework.registry import register_op
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.ops import array_ops
from tfteach.ops.common import (axis_list, binary_inputs, broadcast_shape_fn, const_value,
                                convert_to_tensor, graph_of, same_dtype, same_shape_fn,
                                shape_error)

# ---- elementwise ---------------------------------------------------------------------------
_BINARY: dict[str, Callable] = {
    "Add": lambda ctx, x, y: x + y,
    "AddV2": lambda ctx, x, y: x + y,
    "Sub": lambda ctx, x, y: x - y,
    "Mul": lambda ctx, x, y: x * y,
    "RealDiv": lambda ctx, x, y: x / y,
    "Maximum": lambda ctx, x, y: ctx.xp.maximum(x, y),
    "Minimum": lambda ctx, x, y: ctx.xp.minimum(x, y),
    "Pow": lambda ctx, x, y: x ** y,
    "SquaredDifference": lambda ctx, x, y: (x - y) * (x - y),
}
_COMPARE: dict[str, Callable] = {
    "Equal": lambda ctx, x, y: x == y,
    "NotEqual": lambda ctx, x, y: x != y,
    "Less": lambda ctx, x, y: x < y,
    "LessEqual": lambda ctx, x, y: x <= y,
    "Greater": lambda ctx, x, y: x > y,
    "GreaterEqual": lambda ctx, x, y: x >= y,
    "LogicalAnd": lambda ctx, x, y: ctx.xp.logical_and(x, y),
    "LogicalOr": lambda ctx, x, y: ctx.xp.logical_or(x, y),
}
_UNARY: dict[str, Callable] = {
    "Neg": lambda ctx, x: -x,
    "Log": lambda ctx, x: ctx.xp.log(x),
    "Exp": lambda ctx, x: ctx.xp.exp(x),
    "Sqrt": lambda ctx, x: ctx.xp.sqrt(x),
    "Rsqrt": lambda ctx, x: 1 / ctx.xp.sqrt(x),
    "Square": lambda ctx, x: x * x,
    "Abs": lambda ctx, x: ctx.xp.abs(x),
    "Sign": lambda ctx, x: ctx.xp.sign(x),
    "Reciprocal": lambda ctx, x: 1 / x,
    "Log1p": lambda ctx, x: ctx.xp.log1p(x),
    "LogicalNot": lambda ctx, x: ctx.xp.logical_not(x),
    "Floor": lambda ctx, x: ctx.xp.floor(x),
    "Cos": lambda ctx, x: ctx.xp.cos(x),
    "Sin": lambda ctx, x: ctx.xp.sin(x),
}


def _compare_shape(op):
    return [(dtypes.bool_, broadcast_shape_fn(op)[0][1])]


for _t, _k in _BINARY.items():
    register_op(_t, broadcast_shape_fn, _k)
for _t, _k in _COMPARE.items():
    register_op(_t, _compare_shape, _k)
for _t, _k in _UNARY.items():
    register_op(_t, same_shape_fn, _k)


def _in_op_scope(op_type: str, inputs: list, name: str | None):
    """TF builds an op inside a name scope of its own name, so Python operands converted for
    it are named ``<op>/y``; the op then takes the scope's (unique) name."""
    g = graph_of(inputs)
    return g, g.name_scope(name or op_type)


def _binary(op_type: str, x: Any, y: Any, name: str | None) -> Tensor:
    g, scope_cm = _in_op_scope(op_type, [x, y], name)
    with g.as_default(), scope_cm as scope:
        tx, ty = binary_inputs(op_type, x, y)
        return g.create_op(op_type, [tx, ty], {"T": tx.dtype}, name=scope).outputs[0]


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    t = convert_to_tensor(x)
    return t.graph.create_op(op_type, [t], {"T": t.dtype}, name=name or op_type).outputs[0]


def add(x, y, name=None): return _binary("Add", x, y, name)
def add_v2(x, y, name=None): return _binary("AddV2", x, y, name)  # TF 2's math_ops.add
def subtract(x, y, name=None): return _binary("Sub", x, y, name)
def multiply(x, y, name=None): return _binary("Mul", x, y, name)
def maximum(x, y, name=None): return _binary("Maximum", x, y, name)
def minimum(x, y, name=None): return _binary("Minimum", x, y, name)
def pow(x, y, name=None): return _binary("Pow", x, y, name)
def squared_difference(x, y, name=None): return _binary("SquaredDifference", x, y, name)
def equal(x, y, name=None): return _binary("Equal", x, y, name)
def not_equal(x, y, name=None): return _binary("NotEqual", x, y, name)
def less(x, y, name=None): return _binary("Less", x, y, name)
def less_equal(x, y, name=None): return _binary("LessEqual", x, y, name)
def greater(x, y, name=None): return _binary("Greater", x, y, name)
def greater_equal(x, y, name=None): return _binary("GreaterEqual", x, y, name)
def logical_and(x, y, name=None): return _binary("LogicalAnd", x, y, name)
def logical_or(x, y, name=None): return _binary("LogicalOr", x, y, name)
def negative(x, name=None): return _unary("Neg", x, name)
def log(x, name=None): return _unary("Log", x, name)
def exp(x, name=None): return _unary("Exp", x, name)
def sqrt(x, name=None): return _unary("Sqrt", x, name)
def rsqrt(x, name=None): return _unary("Rsqrt", x, name)
def square(x, name=None): return _unary("Square", x, name)
def abs(x, name=None): return _unary("Abs", x, name)
def sign(x, name=None): return _unary("Sign", x, name)
def reciprocal(x, name=None): return _unary("Reciprocal", x, name)
def log1p(x, name=None): return _unary("Log1p", x, name)
def logical_not(x, name=None): return _unary("LogicalNot", x, name)
def floor(x, name=None): return _unary("Floor", x, name)
def cos(x, name=None): return _unary("Cos", x, name)
def sin(x, name=None): return _unary("Sin", x, name)


sub = subtract
mul = multiply
neg = negative


def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """True division (``RealDiv`` for floats); integers are cast to float64 as TF does."""
    g, scope_cm = _in_op_scope("truediv", [x, y], name)
    with g.as_default(), scope_cm as scope:
        tx, ty = binary_inputs("RealDiv", x, y)
        if tx.dtype.is_integer:
            tx, ty = array_ops.cast(tx, dtypes.float64), array_ops.cast(ty, dtypes.float64)
        return g.create_op("RealDiv", [tx, ty], {"T": tx.dtype}, name=scope).outputs[0]


truediv = divide
div = divide


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any,
                  name: str | None = None) -> Tensor:
    """``t`` limited to [min, max] (Minimum then Maximum, so gradients pass inside the range)."""
    x = convert_to_tensor(t)
    with x.graph.as_default(), x.graph.name_scope(name or "clip_by_value") as scope:
        return maximum(minimum(x, clip_value_max), clip_value_min, name=scope)


# ---- MatMul --------------------------------------------------------------------------------
def _matmul_shape(op):
    a, b = op.inputs
    for t in (a, b):
        if t.shape.ndims is not None and t.shape.ndims != 2:
            raise shape_error(op, f"Shape must be rank 2 but is rank {t.shape.ndims}")
    if a.shape.dims is None or b.shape.dims is None:
        return [(a.dtype, unknown_shape(2))]
    m, k1 = a.shape.dims[::-1] if op.attrs["transpose_a"] else a.shape.dims
    k2, n = b.shape.dims[::-1] if op.attrs["transpose_b"] else b.shape.dims
    if k1 is not None and k2 is not None and k1 != k2:
        raise shape_error(op, f"Dimensions must be equal, but are {k1} and {k2}")
    return [(a.dtype, TensorShape([m, n]))]


def _matmul_kernel(ctx, a, b):
    attrs = ctx.attrs
    return ctx.xp.matmul(a.T if attrs["transpose_a"] else a, b.T if attrs["transpose_b"] else b)


register_op("MatMul", _matmul_shape, _matmul_kernel, cheap=False)


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           name: str | None = None) -> Tensor:
    """Matrix product of two rank-2 tensors."""
    g, scope_cm = _in_op_scope("MatMul", [a, b], name)
    with g.as_default(), scope_cm as scope:
        ta, tb = binary_inputs("MatMul", a, b, names=("a", "b"))
        return g.create_op("MatMul", [ta, tb], {"T": ta.dtype, "transpose_a": transpose_a,
                           "transpose_b": transpose_b}, name=scope).outputs[0]


# ---- AddN ----------------------------------------------------------------------------------
def _add_n_shape(op):
    out = op.inputs[0].shape
    for t in op.inputs[1:]:
        if not out.is_compatible_with(t.shape):
            raise shape_error(op, f"Shapes must be equal rank, but are {out.ndims} and "
                                  f"{t.shape.ndims}" if out.ndims != t.shape.ndims else
                                  f"Dimensions must be equal, but are {out.bracket()} and "
                                  f"{t.shape.bracket()}")
        out = out.merge_with(t.shape)
    return [(op.inputs[0].dtype, out)]


def _add_n_kernel(ctx, *xs):
    out = xs[0] + xs[1] if len(xs) > 1 else xs[0].copy()
    for x in xs[2:]:
        out += x
    return out


register_op("AddN", _add_n_shape, _add_n_kernel, cheap=False)


def add_n(inputs: list, name: str | None = None) -> Tensor:
    """Sum of a list of tensors of the same shape and dtype."""
    if not inputs:
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype "
                         "and shape")
    ts = [convert_to_tensor(t) for t in inputs]
    dt = same_dtype("AddN", ts)
    if len(ts) == 1 and name is None:
        return ts[0]
    return ts[0].graph.create_op("AddN", ts, {"T": dt, "N": len(ts)},
                                 name=name or "AddN").outputs[0]


# ---- reductions ----------------------------------------------------------------------------
def _reduce_shape(op):
    x, a = op.inputs
    axes = const_value(a)
    rank = x.shape.ndims
    out_dt = op.attrs.get("output_type", x.dtype)
    if axes is None or rank is None:
        return [(out_dt, unknown_shape())]
    axes = axis_list(axes, rank)
    if any(ax >= rank or ax < 0 for ax in axes):
        raise shape_error(op, f"Invalid reduction dimension {axes} for input with {rank} "
                              "dimensions")
    keep = op.attrs.get("keep_dims", False)
    dims = [1 if i in axes else d for i, d in enumerate(x.shape.dims)] if keep else \
        [d for i, d in enumerate(x.shape.dims) if i not in axes]
    return [(out_dt, TensorShape(dims))]


def _axes(ctx, a) -> tuple:
    axes = ctx.device.to_host(a).tolist()
    return tuple(axes) if isinstance(axes, list) else (axes,)


def _sum_kernel(ctx, x, a):
    keep = ctx.attrs["keep_dims"]
    if x.dtype.kind == "f":
        return x.sum(axis=_axes(ctx, a), keepdims=keep)
    return x.sum(axis=_axes(ctx, a), keepdims=keep, dtype=x.dtype)


def _mean_kernel(ctx, x, a):
    axes, keep = _axes(ctx, a), ctx.attrs["keep_dims"]
    count = 1
    for ax in axes:
        count *= x.shape[ax]
    if x.dtype.kind == "f" and count:
        return x.sum(axis=axes, keepdims=keep) / count
    out = ctx.xp.mean(x, axis=axes, keepdims=keep)
    return out.astype(x.dtype) if out.dtype != x.dtype else out


def _extreme(ctx, x, a, reduce, lowest: bool):
    """Max or Min; over no elements TF gives the dtype's lowest (Max) or highest (Min)."""
    extra = {}
    if x.size == 0:
        info = np.finfo(x.dtype) if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype)
        extra["initial"] = (-np.inf if lowest else np.inf) if np.issubdtype(
            x.dtype, np.floating) else (info.min if lowest else info.max)
    return reduce(x, axis=_axes(ctx, a), keepdims=ctx.attrs["keep_dims"], **extra)


_REDUCE: dict[str, Callable] = {
    "Sum": _sum_kernel,
    "Mean": _mean_kernel,
    "Max": lambda ctx, x, a: _extreme(ctx, x, a, ctx.xp.max, lowest=True),
    "Min": lambda ctx, x, a: _extreme(ctx, x, a, ctx.xp.min, lowest=False),
    "Prod": lambda ctx, x, a: ctx.xp.prod(x, axis=_axes(ctx, a), keepdims=ctx.attrs["keep_dims"],
                                          dtype=x.dtype),
}
for _t, _k in _REDUCE.items():
    register_op(_t, _reduce_shape, _k)


# ---- Select --------------------------------------------------------------------------------
def _select_shape(op):
    _, t, e = op.inputs
    if not t.shape.is_compatible_with(e.shape):
        raise shape_error(op, "Shapes must be equal")
    return [(t.dtype, t.shape.merge_with(e.shape))]


def _select_kernel(ctx, c, t, e):
    """TF 1.x's Select: a vector condition picks whole rows of higher-rank ``t``/``e``."""
    if c.ndim == 1 and t.ndim > 1:
        c = c.reshape((-1,) + (1,) * (t.ndim - 1))
    return ctx.xp.where(c, t, e)


register_op("Select", _select_shape, _select_kernel)


def select(condition: Any, x: Any, y: Any, name: str | None = None) -> Tensor:
    """Elementwise ``x`` where ``condition`` holds, else ``y`` (TF 1.x ``Select``)."""
    tx, ty = binary_inputs("Select", x, y, names=("t", "e"))
    c = convert_to_tensor(condition, dtype=dtypes.bool_)
    return tx.graph.create_op("Select", [c, tx, ty], {"T": tx.dtype},
                              name=name or "Select").outputs[0]


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """``tf.where(cond, x, y)``: TF 1.x's Select; ``tf.where(cond)``: the coordinates of the
    true elements (Where)."""
    if x is None and y is None:
        from tfteach.ops.where_ops import where_indices
        return where_indices(condition, name=name)
    if x is None or y is None:
        raise ValueError("x and y must both be non-None or both be None.")
    return select(condition, x, y, name=name)


def _reduce(op_type: str, x: Any, axis: Any, keepdims: bool, name: str | None,
            default_name: str, reduction_indices: Any = None) -> Tensor:
    t = convert_to_tensor(x)
    axis = reduction_indices if axis is None else axis
    g = t.graph
    with g.as_default():
        if axis is None:
            if t.shape.ndims is None:
                a = array_ops.range_to_rank(t)
            else:
                a = convert_to_tensor(np.arange(t.shape.ndims, dtype=np.int32), name="Const")
        else:
            a = convert_to_tensor(axis, dtype=dtypes.int32, name="Const")
    return g.create_op(op_type, [t, a], {"T": t.dtype, "keep_dims": bool(keepdims)},
                       name=name or default_name).outputs[0]


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Sum", input_tensor, axis, keep_dims or keepdims, name, "Sum",
                   reduction_indices)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
                keep_dims=None):
    return _reduce("Mean", input_tensor, axis, keep_dims or keepdims, name, "Mean",
                   reduction_indices)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Max", input_tensor, axis, keep_dims or keepdims, name, "Max",
                   reduction_indices)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
               keep_dims=None):
    return _reduce("Min", input_tensor, axis, keep_dims or keepdims, name, "Min",
                   reduction_indices)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None, reduction_indices=None,
                keep_dims=None):
    return _reduce("Prod", input_tensor, axis, keep_dims or keepdims, name, "Prod",
                   reduction_indices)


# ---- ArgMax / ArgMin -----------------------------------------------------------------------
def _arg_shape(op):
    op.attrs["keep_dims"] = False
    return _reduce_shape(op)


def _arg_kernel(fn_name: str) -> Callable:
    def kernel(ctx, x, a):
        return getattr(ctx.xp, fn_name)(x, axis=int(ctx.device.to_host(a))).astype(
            ctx.attrs["output_type"].np)
    return kernel


register_op("ArgMax", _arg_shape, _arg_kernel("argmax"))
register_op("ArgMin", _arg_shape, _arg_kernel("argmin"))


def _arg(op_type: str, x: Any, axis: Any, name: str | None, output_type: Any) -> Tensor:
    t = convert_to_tensor(x)
    with t.graph.as_default():
        a = convert_to_tensor(0 if axis is None else axis, dtype=dtypes.int32,
                              name=f"{name or op_type}/dimension")
    return t.graph.create_op(op_type, [t, a], {"T": t.dtype, "output_type":
                             dtypes.as_dtype(output_type)}, name=name or op_type).outputs[0]


def argmax(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):
    return _arg("ArgMax", input, dimension if axis is None else axis, name, output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):
    return _arg("ArgMin", input, dimension if axis is None else axis, name, output_type)


def arg_max(input, dimension, output_type=dtypes.int64, name=None):
    """TF 1.x's older spelling of ``argmax`` (``dimension`` second, ``output_type`` third)."""
    return _arg("ArgMax", input, dimension, name, output_type)


def arg_min(input, dimension, output_type=dtypes.int64, name=None):
    """TF 1.x's older spelling of ``argmin``."""
    return _arg("ArgMin", input, dimension, name, output_type)


# ---- Tensor operators ------------------------------------------------------------------------
def _swap(fn: Callable, name: str) -> Callable:
    return lambda self, other: fn(other, self, name=name)


for _op, _fn in {
    "__add__": lambda s, o: add(s, o, name="add"),
    "__radd__": _swap(add, "add"),
    "__sub__": lambda s, o: subtract(s, o, name="sub"),
    "__rsub__": _swap(subtract, "sub"),
    "__mul__": lambda s, o: multiply(s, o, name="mul"),
    "__rmul__": _swap(multiply, "mul"),
    "__truediv__": lambda s, o: divide(s, o, name="truediv"),
    "__rtruediv__": _swap(divide, "truediv"),
    "__matmul__": lambda s, o: matmul(s, o),
    "__rmatmul__": lambda s, o: matmul(o, s),
    "__neg__": lambda s: negative(s),
    "__abs__": lambda s: abs(s),
    "__pow__": lambda s, o: pow(s, o, name="pow"),
    "__lt__": lambda s, o: less(s, o),
    "__le__": lambda s, o: less_equal(s, o),
    "__gt__": lambda s, o: greater(s, o),
    "__ge__": lambda s, o: greater_equal(s, o),
    "__and__": lambda s, o: logical_and(s, o),
    "__or__": lambda s, o: logical_or(s, o),
    "__invert__": lambda s: logical_not(s),
}.items():
    register_operator(_op, _fn)
