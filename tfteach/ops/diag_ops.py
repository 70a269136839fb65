"""Diagonal tensors: Diag (``tf.diag``: a rank-k tensor becomes the rank-2k tensor with it
on the diagonal) and DiagPart (``tf.diag_part``: the inverse), each the other's gradient,
as in TF. No state.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.ops.common import convert_to_tensor, graph_of, shape_error


def _diag_shape(op):
    x = op.inputs[0]
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape())]
    if x.shape.ndims < 1:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return [(x.dtype, TensorShape(list(x.shape.dims) * 2))]


def _diag_kernel(ctx, x):
    xp, n = ctx.xp, x.size
    out = xp.zeros((n, n), dtype=x.dtype)
    out[xp.arange(n), xp.arange(n)] = x.reshape(-1)
    return out.reshape(x.shape + x.shape)


def _diag_part_shape(op):
    x = op.inputs[0]
    rank = x.shape.ndims
    if rank is None:
        return [(x.dtype, unknown_shape())]
    if rank % 2 or rank == 0:
        raise shape_error(op, f"Input must have even and non-zero rank, input rank is {rank}")
    half = rank // 2
    dims = list(x.shape.dims)
    for a, b in zip(dims[:half], dims[half:], strict=True):
        if a is not None and b is not None and a != b:
            raise shape_error(op, f"Dimensions must be equal, but are {a} and {b}")
    return [(x.dtype, TensorShape([a if a is not None else b
                                   for a, b in zip(dims[:half], dims[half:], strict=True)]))]


def _diag_part_kernel(ctx, x):
    half = x.shape[:x.ndim // 2]
    n = 1
    for d in half:
        n *= d
    return ctx.xp.diagonal(x.reshape(n, n)).reshape(half).copy()


register_op("Diag", _diag_shape, _diag_kernel)
register_op("DiagPart", _diag_part_shape, _diag_part_kernel)


def _build(op_type: str, arg: str, x: Any, name: str | None) -> Tensor:
    g = graph_of([x])
    with g.as_default(), g.name_scope(name or op_type) as scope:
        t = convert_to_tensor(x, name=arg)
        return g.create_op(op_type, [t], {"T": t.dtype}, name=scope).outputs[0]


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """The tensor with ``diagonal`` on its diagonal and zeros elsewhere (rank doubled)."""
    return _build("Diag", "diagonal", diagonal, name)


def diag_part(input: Any, name: str | None = None) -> Tensor:
    """The diagonal of a rank-2k tensor whose first k dimensions equal its last k."""
    return _build("DiagPart", "input", input, name)


set_gradient("Diag", lambda op, grad: [diag_part(grad)])
set_gradient("DiagPart", lambda op, grad: [diag(grad)])
