"""``tf.reverse`` (ReverseV2): the elements of a tensor in reverse order along some axes.

What ``tf.image.flip_left_right`` and ``flip_up_down`` are built from. Its gradient is the
same reversal of the incoming gradient.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import ALL_TYPES, register_op, set_gradient
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, create_op


def _axes(ctx: Any, x: Any, axis: Any) -> tuple:
    axes = [int(a) for a in np.atleast_1d(ctx.device.to_host(axis))]
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise errors.InvalidArgumentError(
                f"'axis'[{axes.index(a)}] = {a} is out of valid range [0, {x.ndim - 1}]",
                op=ctx.op, hint=tr("reverse along axes the tensor has."))
    return tuple(a % x.ndim for a in axes)


def _reverse_kernel(ctx: Any, x: Any, axis: Any) -> Any:
    return ctx.xp.flip(x, _axes(ctx, x, axis)) if x.ndim else x


register_op("ReverseV2", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _reverse_kernel,
            gpu_types=ALL_TYPES)


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """``tf.reverse(tensor, axis)``: ``tensor`` with the order along each of ``axis`` reversed."""
    t = convert_to_tensor(tensor, name="tensor")
    with t.graph.as_default():
        a = convert_to_tensor(axis, dtype=dtypes.int32, name="axis")
    return create_op("ReverseV2", [t, a], {"T": t.dtype, "Tidx": dtypes.int32},
                     name or "ReverseV2").outputs[0]


set_gradient("ReverseV2", lambda op, grad: [reverse(grad, op.inputs[1]), None])
