"""Where (``tf.where(condition)`` with one argument): the coordinates of the true (non-zero)
elements, one int64 row per element in row-major order, as TF's Where. ``boolean_mask``
selects with it. Not differentiable. No state.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.ops.common import convert_to_tensor, graph_of

__all__ = ["where_indices"]


def _where_shape(op: Any) -> list:
    return [(dtypes.int64, TensorShape([None, op.inputs[0].shape.ndims]))]


def _where_kernel(ctx: Any, x: Any) -> Any:
    return ctx.xp.argwhere(x).astype("int64")


register_op("Where", _where_shape, _where_kernel)
not_differentiable("Where")


def where_indices(condition: Any, name: str | None = None) -> Tensor:
    """The coordinates of ``condition``'s true elements, shape ``[num_true, rank]``."""
    g = graph_of([condition])
    with g.as_default():
        c = convert_to_tensor(condition, name="input")
        return g.create_op("Where", [c], {"T": c.dtype}, name=name or "Where").outputs[0]
