"""Boolean reductions: All and Any (``tf.reduce_all``, ``tf.reduce_any``) and
``tf.count_nonzero``, which TF composes from NotEqual, Cast and Sum under its own scope.

All and Any take a bool tensor and the axes to reduce (a Const named ``Const``, every axis
when none is given), share the other reductions' shape function and have no gradient, as
in TF. No state.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor


def _all_kernel(ctx, x, a):
    return ctx.xp.all(x, axis=math_ops._axes(ctx, a), keepdims=ctx.attrs["keep_dims"])


def _any_kernel(ctx, x, a):
    return ctx.xp.any(x, axis=math_ops._axes(ctx, a), keepdims=ctx.attrs["keep_dims"])


register_op("All", math_ops._reduce_shape, _all_kernel)
register_op("Any", math_ops._reduce_shape, _any_kernel)
not_differentiable("All", "Any")


def _bool_reduce(op_type: str, x: Any, axis: Any, keepdims: bool, name: str | None,
                 reduction_indices: Any) -> Tensor:
    t = convert_to_tensor(x)
    if t.dtype is not dtypes.bool_:
        raise TypeError(f"Input 'input' of '{op_type}' Op has type {t.dtype.name} that does "
                        "not match expected type of bool.")
    return math_ops._reduce(op_type, t, axis, keepdims, name, op_type, reduction_indices)


def reduce_all(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None, reduction_indices: Any = None,
               keep_dims: bool | None = None) -> Tensor:
    """Logical and over ``axis`` (every axis when None) of a bool tensor."""
    return _bool_reduce("All", input_tensor, axis, keep_dims or keepdims, name,
                        reduction_indices)


def reduce_any(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None, reduction_indices: Any = None,
               keep_dims: bool | None = None) -> Tensor:
    """Logical or over ``axis`` (every axis when None) of a bool tensor."""
    return _bool_reduce("Any", input_tensor, axis, keep_dims or keepdims, name,
                        reduction_indices)


def count_nonzero(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                  dtype: Any = dtypes.int64, name: str | None = None,
                  reduction_indices: Any = None, keep_dims: bool | None = None) -> Tensor:
    """How many elements are not zero, over ``axis``, as ``dtype`` (int64 by default)."""
    t = convert_to_tensor(input_tensor)
    g = t.graph
    with g.as_default(), g.name_scope(name or "count_nonzero"):
        t = convert_to_tensor(t, name="input")
        zero = array_ops.zeros([], dtype=t.dtype)
        nonzero = array_ops.cast(math_ops.not_equal(t, zero), dtypes.int64)
        total = math_ops.reduce_sum(nonzero, axis=axis, keepdims=keep_dims or keepdims,
                                    reduction_indices=reduction_indices)
        return array_ops.cast(total, dtype)
