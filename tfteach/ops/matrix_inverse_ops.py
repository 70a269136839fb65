"""MatrixInverse (``tf.matrix_inverse``, ``tf.linalg.inv``): the inverse of each inner
square matrix, ``adjoint`` as TF, InvalidArgumentError "Input is not invertible." for a
singular one; TF's gradient ``-inv^T grad inv^T`` (for rank-2 inputs). No state.
"""
from __future__ import annotations

from typing import Any

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.ops import math_ops
from tfteach.ops.common import convert_to_tensor, graph_of, shape_error


def _inverse_shape(op):
    x = op.inputs[0]
    rank = x.shape.ndims
    if rank is None:
        return [(x.dtype, unknown_shape())]
    if rank < 2:
        raise shape_error(op, f"Shape must be at least rank 2 but is rank {rank}")
    m, n = x.shape.dims[-2:]
    if m is not None and n is not None and m != n:
        raise shape_error(op, f"Dimensions must be equal, but are {m} and {n}")
    return [(x.dtype, TensorShape(list(x.shape.dims)))]


def _inverse_kernel(ctx, x):
    xp = ctx.xp
    if ctx.attrs["adjoint"]:
        x = xp.swapaxes(x, -1, -2).conj()
    if x.size == 0:
        return x.copy()
    if not bool(xp.all(xp.isfinite(x))) or bool(xp.any(xp.linalg.matrix_rank(x) <
                                                       x.shape[-1])):
        raise errors.InvalidArgumentError("Input is not invertible.")
    return xp.linalg.inv(x).astype(x.dtype)


register_op("MatrixInverse", _inverse_shape, _inverse_kernel, cheap=False)


def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """The inverse (of the adjoint, with ``adjoint``) of each inner square matrix."""
    g = graph_of([input])
    with g.as_default(), g.name_scope(name or "MatrixInverse") as scope:
        t = convert_to_tensor(input, name="input")
        return g.create_op("MatrixInverse", [t], {"T": t.dtype, "adjoint": bool(adjoint)},
                           name=scope).outputs[0]


def _inverse_grad(op, grad):
    inv = op.outputs[0]
    if op.attrs["adjoint"]:
        return [-math_ops.matmul(inv, math_ops.matmul(grad, inv, transpose_a=True))]
    return [-math_ops.matmul(inv, math_ops.matmul(grad, inv, transpose_b=True),
                             transpose_a=True)]


set_gradient("MatrixInverse", _inverse_grad)
