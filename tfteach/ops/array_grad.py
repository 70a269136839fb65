"""Gradients of the array ops (TF's ``array_grad``): those of ``array_ops`` and
``manip_ops``, each ``grad(op, *grads) -> [grad per input]`` (TF's convention); the ops without
one are ``not_differentiable``. ``gradients_impl`` imports this module, so ``import tfteach``
registers them.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.framework.registry import not_differentiable, set_gradient
from tfteach.ops.array_ops import (cast, concat, invert_permutation, pad, range_, reshape, shape,
                                   shape_of, size, slice_, stack, transpose, unstack)
from tfteach.ops.common import const_value
from tfteach.ops.math_grad import sum_to
from tfteach.ops.math_ops import reduce_sum, subtract


def _fill_grad(op, grad):
    return [None, reduce_sum(grad)]


set_gradient("Fill", _fill_grad)


def _reshape_grad(op, grad):
    return [reshape(grad, shape_of(op.inputs[0])), None]


set_gradient("Reshape", _reshape_grad)


def _transpose_grad(op, grad):
    perm = const_value(op.inputs[1])
    inverse = (np.argsort(perm).astype(np.int32) if perm is not None
               else invert_permutation(op.inputs[1]))
    return [transpose(grad, inverse), None]


set_gradient("Transpose", _transpose_grad)


def _concat_grad(op, grad):
    """Each input's slice of ``grad``, at offsets from ``ConcatOffset`` (as TF does)."""
    *values, axis = op.inputs
    shapes = [shape(v) for v in values]
    offsets = op.graph.create_op("ConcatOffset", [axis] + shapes, {"N": len(values)},
                                 name="ConcatOffset").outputs
    return [slice_(grad, o, s) for o, s in zip(offsets, shapes, strict=True)] + [None]


set_gradient("ConcatV2", _concat_grad)


def _cast_grad(op, grad):
    if op.attrs["SrcT"].is_floating and op.attrs["DstT"].is_floating:
        return [cast(grad, op.attrs["SrcT"])]
    return [None]


set_gradient("Cast", _cast_grad)


def _tile_grad(op, grad):
    """Sum the tiles: view grad as [m0, d0, m1, d1, ...] and sum the m axes (TF's way)."""
    x, multiples = op.inputs
    split_shape = reshape(transpose(stack([multiples, shape(x)])), [-1])
    axes = range_(0, size(split_shape), 2)
    return [reduce_sum(reshape(grad, split_shape), axes), None]


set_gradient("Tile", _tile_grad)


def _slice_grad(op, grad):
    x, begin, _ = op.inputs
    after = subtract(subtract(shape(x), shape(op.outputs[0])), begin)
    return [pad(grad, stack([begin, after], axis=1)), None, None]


set_gradient("Slice", _slice_grad)


def _pad_grad(op, grad):
    x, paddings = op.inputs
    p = const_value(paddings)
    if p is not None:
        begin: Any = np.asarray(p, dtype=np.int32)[:, 0]
    else:
        begin = reshape(slice_(paddings, [0, 0], [-1, 1]), [-1])
    return [slice_(grad, begin, shape_of(x)), None]


set_gradient("Pad", _pad_grad)


def _broadcast_to_grad(op, grad):
    return [sum_to(grad, op.inputs[0], op.outputs[0]), None]


set_gradient("BroadcastTo", _broadcast_to_grad)


# ---- one-line gradients ----------------------------------------------------------------------
set_gradient("PlaceholderWithDefault", lambda op, grad: [grad])
set_gradient("Identity", lambda op, grad: [grad])
set_gradient("Split", lambda op, *grads: [None, concat(list(grads), op.inputs[0])])
set_gradient("ExpandDims", lambda op, grad: [reshape(grad, shape_of(op.inputs[0])), None])
set_gradient("Squeeze", lambda op, grad: [reshape(grad, shape_of(op.inputs[0]))])
set_gradient("Pack", lambda op, grad: unstack(grad, num=len(op.inputs), axis=op.attrs["axis"]))
set_gradient("Unpack", lambda op, *grads: [stack(list(grads), axis=op.attrs["axis"])])


# ---- ops without a gradient ------------------------------------------------------------------
not_differentiable("StopGradient", "ZerosLike", "OnesLike", "Shape", "Size", "Rank",
                   "InvertPermutation", "ConcatOffset", "Range", "BroadcastGradientArgs", "OneHot")
