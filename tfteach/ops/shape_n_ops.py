"""``tf.shape_n`` (ShapeN): the shapes of several tensors from one op.

TF's gradients of Conv2D and of broadcasting ops read their inputs' shapes with it, so a
GraphDef TensorFlow wrote for training imports with it. Each output is the int32 (or
``out_type``) vector of one input's shape, known at build time as far as that shape is.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.registry import ALL_TYPES, not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.ops.allocation import shape_vector
from tfteach.ops.common import convert_to_tensor, create_op

__all__ = ["shape_n"]


def _shape(op: Any) -> list:
    out = op.attrs.get("out_type", dtypes.int32)
    return [(out, TensorShape([t.shape.ndims])) for t in op.inputs]


def _kernel(ctx: Any, *inputs: Any) -> tuple:
    return tuple(shape_vector(ctx, x.shape) for x in inputs)


register_op("ShapeN", _shape, _kernel, gpu_types=ALL_TYPES)
not_differentiable("ShapeN")


def shape_n(input: list, out_type: Any = dtypes.int32, name: str | None = None) -> list:
    """``tf.shape_n``: one shape vector per tensor of ``input``."""
    tensors = [convert_to_tensor(t) for t in input]
    if not tensors:
        raise ValueError("shape_n needs at least one tensor.")
    attrs = {"N": len(tensors), "T": tensors[0].dtype, "out_type": dtypes.as_dtype(out_type)}
    return list(create_op("ShapeN", tensors, attrs, name or "ShapeN").outputs)
