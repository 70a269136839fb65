"""SegmentSum (``tf.segment_sum``, ``tf.math.segment_sum``): sums of the rows of ``data``
that share a segment id, for sorted ids; row ``i`` of the result is segment ``i`` (zeros for
ids that do not occur), ``ids[-1] + 1`` rows in all. Unsorted or negative ids are
InvalidArgumentError, as in TF. Its gradient gathers the output gradient by id (TF's).
No state. ``tf.unsorted_segment_sum`` is in ``gather_ops``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, graph_of, index_add, shape_error
from tfteach.ops.gather_ops import gather

__all__ = ["segment_sum"]


def _segment_shape(op: Any) -> list:
    data, ids = op.inputs
    if ids.shape.ndims not in (None, 1):
        raise shape_error(op, f"Shape must be rank 1 but is rank {ids.shape.ndims}")
    if data.shape.ndims is None:
        return [(data.dtype, unknown_shape())]
    if data.shape.ndims < 1:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return [(data.dtype, TensorShape([None] + list(data.shape.dims[1:])))]


def _check_ids(ctx: Any, data: Any, ids: np.ndarray) -> None:
    if ids.shape[0] != data.shape[0]:
        raise errors.InvalidArgumentError(
            "segment_ids should be the same size as dimension 0 of input.", op=ctx.op,
            hint=tr("give one segment id per row of data."))
    bad = np.nonzero(np.diff(ids) < 0)[0]
    if ids.size and (ids[0] < 0 or bad.size):
        at = 0 if ids[0] < 0 else int(bad[0]) + 1
        raise errors.InvalidArgumentError(
            f"segment ids must be >= 0 and sorted; segment_ids[{at}] = {int(ids[at])}",
            op=ctx.op, hint=tr("tf.segment_sum needs sorted ids; for unsorted ones use "
                               "tf.unsorted_segment_sum."))


def _segment_sum_kernel(ctx: Any, data: Any, ids: Any) -> Any:
    host_ids = np.asarray(ctx.device.to_host(ids)).astype(np.int64)
    _check_ids(ctx, data, host_ids)
    rows = int(host_ids[-1]) + 1 if host_ids.size else 0
    out = ctx.xp.zeros((rows,) + tuple(data.shape[1:]), dtype=data.dtype)
    index_add(ctx.xp, out, ctx.xp.asarray(host_ids), data)
    return out


register_op("SegmentSum", _segment_shape, _segment_sum_kernel)
set_gradient("SegmentSum", lambda op, grad: [gather(grad, op.inputs[1]), None])


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """Sums of ``data``'s rows per (sorted) segment id."""
    g = graph_of([data, segment_ids])
    with g.as_default():
        d = convert_to_tensor(data, name="data")
        i = convert_to_tensor(segment_ids, name="segment_ids")
        return g.create_op("SegmentSum", [d, i], {"T": d.dtype, "Tindices": i.dtype},
                           name=name or "SegmentSum").outputs[0]
