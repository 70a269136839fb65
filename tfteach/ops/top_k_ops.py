"""Top-k: TopKV2 (``tf.nn.top_k``: the k largest entries of each last-axis row, with their
indices, ties to the lower index as in TF) and InTopKV2 (``tf.nn.in_top_k``: whether each
row's target class is among its k largest predictions).

TopKV2's gradient sends each value's gradient back to the position it came from, summing
into a flat input (TF scatters with ScatterNd; tfteach uses UnsortedSegmentSum, which adds
the same way). No state.
"""
from __future__ import annotations

from typing import Any

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import not_differentiable, register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.ops import array_ops, gather_ops, math_ops
from tfteach.ops.common import const_value, convert_to_tensor, shape_error


# ---- TopKV2 ----------------------------------------------------------------------------------
def _top_k_shape(op):
    x, k = op.inputs
    rank, kv = x.shape.ndims, const_value(k)
    if rank is not None and rank < 1:
        raise shape_error(op, f"Shape must be at least rank 1 but is rank {rank}")
    if rank is None:
        dims = None
    else:
        last = x.shape.dims[-1]
        if kv is not None and last is not None and last < int(kv):
            raise shape_error(op, f"input must have last dimension >= k = {int(kv)} but is "
                                  f"{last}")
        dims = list(x.shape.dims[:-1]) + [None if kv is None else int(kv)]
    out = TensorShape(dims)
    return [(x.dtype, out), (op.attrs["index_type"], out)]


def _descending_order(xp, x):
    """Indices that sort each last-axis row from largest to smallest, equal values keeping
    their order (a stable ascending sort of the reversed row, read backwards)."""
    n = x.shape[-1]
    return n - 1 - xp.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]


def _top_k_kernel(ctx, x, k):
    xp, kv = ctx.xp, int(ctx.device.to_host(k))
    if x.shape[-1] < kv:
        raise errors.InvalidArgumentError(f"input must have at least k columns. Had "
                                          f"{x.shape[-1]}, needed {kv}")
    idx = _descending_order(xp, x)[..., :kv]
    return xp.take_along_axis(x, idx, axis=-1), idx.astype(ctx.attrs["index_type"].np)


register_op("TopKV2", _top_k_shape, _top_k_kernel)


def _top_k_grad(op, grad, _indices_grad):
    x, idx = op.inputs[0], op.outputs[1]
    in_shape = array_ops.shape(x)
    total = math_ops.reduce_prod(in_shape)
    last = in_shape[-1]
    k = array_ops.shape(idx)[-1]
    offsets = array_ops.range_(0, total, last)
    flat = array_ops.reshape(array_ops.reshape(idx, [-1, k]) +
                             array_ops.expand_dims(offsets, -1), [-1])
    summed = gather_ops.unsorted_segment_sum(array_ops.reshape(grad, [-1]), flat, total)
    return [array_ops.reshape(summed, in_shape), None]


set_gradient("TopKV2", _top_k_grad)


def top_k(input: Any, k: Any = 1, sorted: bool = True, name: str | None = None) -> tuple:
    """``values, indices``: the ``k`` largest entries of each last-axis row of ``input``."""
    t = convert_to_tensor(input)
    g = t.graph
    with g.as_default(), g.name_scope(name or "TopKV2") as scope:
        kt = convert_to_tensor(k, dtype=dtypes.int32, name="k")
        op = g.create_op("TopKV2", [t, kt], {"T": t.dtype, "sorted": bool(sorted),
                         "index_type": dtypes.int32}, name=scope)
    return op.outputs[0], op.outputs[1]


# ---- InTopKV2 --------------------------------------------------------------------------------
def _in_top_k_shape(op):
    predictions, targets, _ = op.inputs
    if predictions.shape.ndims not in (None, 2):
        raise shape_error(op, f"Shape must be rank 2 but is rank {predictions.shape.ndims}")
    if targets.shape.ndims not in (None, 1):
        raise shape_error(op, f"Shape must be rank 1 but is rank {targets.shape.ndims}")
    batch = predictions.shape.dims[0] if predictions.shape.ndims else None
    if batch is None and targets.shape.ndims:
        batch = targets.shape.dims[0]
    return [(dtypes.bool_, TensorShape([batch]))]


def _in_top_k_kernel(ctx, predictions, targets, k):
    xp, kv = ctx.xp, int(ctx.device.to_host(k))
    n = predictions.shape[1]
    valid = (targets >= 0) & (targets < n)
    safe = xp.where(valid, targets, 0).astype("int64")
    target_value = xp.take_along_axis(predictions, safe[:, None], axis=1)
    greater = (predictions > target_value).sum(axis=1)
    finite = xp.isfinite(target_value[:, 0])
    return valid & finite & (greater < kv)


register_op("InTopKV2", _in_top_k_shape, _in_top_k_kernel)
not_differentiable("InTopKV2")


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """Whether each ``targets[i]`` is among the ``k`` largest ``predictions[i]``."""
    p = convert_to_tensor(predictions)
    g = p.graph
    with g.as_default(), g.name_scope(name or "in_top_k"), \
            g.name_scope(name or "InTopKV2") as scope:
        t = convert_to_tensor(targets, name="targets")
        kt = convert_to_tensor(k, dtype=t.dtype, name="k")
        return g.create_op("InTopKV2", [p, t, kt], {"T": t.dtype}, name=scope).outputs[0]
