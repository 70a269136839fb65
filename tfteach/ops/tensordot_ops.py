"""``tf.tensordot``, composed as TF composes it: each operand transposed and reshaped to a
matrix (free axes x contracted axes), one MatMul, and a Reshape named ``Tensordot`` back to
the free dimensions (left out when the MatMul already has that shape). Shapes known while
building give constant shapes; otherwise they come from Shape, Gather and Prod at run time
(an unknown rank uses Range and ListDiff). Its gradient is the ops'. No state.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.gather_ops import gather
from tfteach.ops.manip_ops import concat, stack
from tfteach.ops.range_ops import range_
from tfteach.ops.set_ops import setdiff1d

__all__ = ["tensordot"]


def _static_reshape(a: Tensor, axes: list, flipped: bool) -> tuple:
    shape = a.shape.as_list()
    axes = [i if i >= 0 else i + len(shape) for i in axes]
    free = [i for i in range(len(shape)) if i not in axes]
    free_dims = [shape[i] for i in free]
    prod_free = int(np.prod(free_dims))
    prod_axes = int(np.prod([shape[i] for i in axes]))
    perm = axes + free if flipped else free + axes
    new_shape = [prod_axes, prod_free] if flipped else [prod_free, prod_axes]
    moved = array_ops.transpose(a, perm) if perm != list(range(len(shape))) else a
    if moved.shape.as_list() != new_shape:
        moved = array_ops.reshape(moved, new_shape)
    return moved, free_dims, free_dims


def _dynamic_reshape(a: Tensor, axes: Any, flipped: bool) -> tuple:
    if a.shape.ndims is not None and isinstance(axes, list):
        shape = a.shape.as_list()
        axes = [i if i >= 0 else i + len(shape) for i in axes]
        free = [i for i in range(len(shape)) if i not in axes]
        free_static = [shape[i] for i in free]
        axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        free = convert_to_tensor(free, dtype=dtypes.int32, name="free")
    else:
        free_static = None
        rank = array_ops.rank(a)
        axes = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
        axes = math_ops.where(axes >= 0, axes, axes + rank)
        free, _ = setdiff1d(range_(rank), axes)
    shape_a = array_ops.shape(a)
    free_dims = gather(shape_a, free)
    prod_free = math_ops.reduce_prod(free_dims)
    prod_axes = math_ops.reduce_prod(gather(shape_a, axes))
    perm = concat([axes, free], 0) if flipped else concat([free, axes], 0)
    new_shape = stack([prod_axes, prod_free] if flipped else [prod_free, prod_axes])
    return array_ops.reshape(array_ops.transpose(a, perm), new_shape), free_dims, free_static


def _reshape_for_matmul(a: Tensor, axes: Any, flipped: bool = False) -> tuple:
    if a.shape.is_fully_defined() and isinstance(axes, list):
        return _static_reshape(a, axes, flipped)
    return _dynamic_reshape(a, axes, flipped)


def _axes_pair(a: Tensor, axes: Any) -> tuple:
    if isinstance(axes, (int, np.integer)):
        if axes < 0:
            raise ValueError(f"`axes` must be at least 0. Received: {axes}.")
        if a.shape.ndims is not None:
            if axes > a.shape.ndims:
                raise ValueError(f"`axes` must not be larger than the number of dimensions "
                                 f"of tensor {a}.  Received {axes}, vs tensor dimensions "
                                 f"{a.shape.ndims}.")
            return list(range(a.shape.ndims - axes, a.shape.ndims)), list(range(axes))
        rank = array_ops.rank(a)
        return range_(rank - axes, rank), range_(axes)
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise ValueError(f"`axes` must be an integer or have length 2. Received {axes}.")
        a_axes, b_axes = axes
        if isinstance(a_axes, (int, np.integer)) and isinstance(b_axes, (int, np.integer)):
            a_axes, b_axes = [a_axes], [b_axes]
        if len(a_axes) != len(b_axes):
            raise ValueError(f"Different number of contraction axes `a` and `b`, "
                             f"{len(a_axes)} != {len(b_axes)}.")
        return [int(i) for i in a_axes], [int(i) for i in b_axes]
    t = convert_to_tensor(axes, dtype=dtypes.int32, name="axes")
    return t[0], t[1]


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Sums the products of ``a`` and ``b`` over ``axes`` (an int N: a's last N and b's
    first N axes; or a pair of axis lists; 0: the outer product)."""
    g = graph_of([a, b])
    with g.as_default(), g.name_scope(name or "Tensordot") as scope:
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, name="b")
        a_axes, b_axes = _axes_pair(a, axes)
        a_mat, a_free, a_static = _reshape_for_matmul(a, a_axes)
        b_mat, b_free, b_static = _reshape_for_matmul(b, b_axes, True)
        product = math_ops.matmul(a_mat, b_mat)
        if isinstance(a_free, list) and isinstance(b_free, list):
            if product.shape.is_fully_defined() and product.shape.as_list() == a_free + b_free:
                return product
            dims = convert_to_tensor(a_free + b_free, dtype=dtypes.int32, name="shape")
        else:
            dims = concat([convert_to_tensor(a_free, dtype=dtypes.int32),
                           convert_to_tensor(b_free, dtype=dtypes.int32)], 0)
        out = g.create_op("Reshape", [product, dims], {"T": product.dtype},
                          name=scope).outputs[0]
        if a_static is not None and b_static is not None:
            out.set_shape(a_static + b_static)
        return out
