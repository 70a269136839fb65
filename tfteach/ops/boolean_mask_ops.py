"""``tf.boolean_mask``, composed as TF composes it: the masked dimensions are flattened into
one (Reshape), the mask's true positions found (Where + Squeeze) and gathered (GatherV2),
so its gradient comes from those ops'. No op type of its own; no state.
"""
from __future__ import annotations

from typing import Any

from tfteach.errors import with_hint
from tfteach.framework.graph import Tensor
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of
from tfteach.ops.gather_ops import gather
from tfteach.ops.manip_ops import concat
from tfteach.ops.where_ops import where_indices

__all__ = ["boolean_mask"]


def _mask_rank(mask: Tensor) -> int:
    ndims = mask.shape.ndims
    if ndims == 0:
        raise ValueError(with_hint("mask cannot be scalar.",
                                   tr("a mask has one bool per element (or row) to keep.")))
    if ndims is None:
        raise ValueError(with_hint(
            "Number of mask dimensions must be specified, even if some dimensions are None.  "
            "E.g. shape=[None] is ok, but shape=None is not.",
            tr("give the mask's placeholder a shape such as [None].")))
    return ndims


def _static_shape(shape: TensorShape, mask: Tensor, axis: int, n: int) -> TensorShape:
    """The reshaped tensor's shape, checked against the mask's (TF's set_shape)."""
    if shape.ndims is None:
        return TensorShape(None)
    masked = TensorShape(shape.dims[axis:axis + n])
    if not masked.is_compatible_with(mask.shape):
        raise ValueError(f"Shapes {masked} and {mask.shape} are incompatible")
    first = masked.num_elements()
    return TensorShape(list(shape.dims[:axis]) + [first] + list(shape.dims[axis + n:]))


def boolean_mask(tensor: Any, mask: Any, name: str = "boolean_mask",
                 axis: Any = None) -> Tensor:
    """The slices of ``tensor`` (from ``axis`` on) where the bool ``mask`` is true."""
    g = graph_of([tensor, mask])
    with g.as_default(), g.name_scope(name):
        tensor = convert_to_tensor(tensor, name="tensor")
        mask = convert_to_tensor(mask, name="mask")
        n = _mask_rank(mask)
        axis = 0 if axis is None else axis
        axis_value = const_value(axis) if isinstance(axis, Tensor) else axis
        static = tensor.shape
        shape = array_ops.shape(tensor)
        a = int(axis_value) if axis_value is not None else axis
        leading = math_ops.reduce_prod(shape[a:a + n], [0])
        flat = array_ops.reshape(tensor, concat([shape[:a], [leading], shape[a + n:]], 0))
        if axis_value is not None:
            flat.set_shape(_static_shape(static, mask, int(axis_value), n))
        mask = array_ops.reshape(mask, [-1])
        indices = array_ops.squeeze(where_indices(mask), axis=[1])
        return gather(flat, indices, axis=a)
