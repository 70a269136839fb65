"""Gradient clipping: ``clip_by_norm``, ``global_norm``, ``clip_by_global_norm``,
``clip_by_average_norm`` (TF's ``clip_ops``).

No op types of their own: each composes existing ops in TF's order and with TF's names
(``clip_by_global_norm/global_norm/L2Loss``, ``clip_by_norm/Select``, ...), so gradients come
from those ops. ``IndexedSlices`` are clipped through their values and keep their indices;
``None`` entries of a list stay ``None``.
"""
from __future__ import annotations

from typing import Any, Sequence

from tfteach.framework.graph import Tensor
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.ops import array_ops, math_ops, nn_ops
from tfteach.ops.common import convert_to_tensor, graph_of

__all__ = ["clip_by_average_norm", "clip_by_global_norm", "clip_by_norm", "global_norm"]


def _values(t: Any, name: str) -> Tensor:
    return convert_to_tensor(t.values if isinstance(t, IndexedSlices) else t, name=name)


def _like(t: Any, values: Tensor) -> Any:
    if isinstance(t, IndexedSlices):
        return IndexedSlices(values, t.indices, t.dense_shape)
    return values


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Any:
    """``t * clip_norm / max(l2norm(t, axes), clip_norm)`` (TF's ``tf.clip_by_norm``)."""
    g = graph_of([t.values if isinstance(t, IndexedSlices) else t, clip_norm])
    with g.as_default(), g.name_scope(name or "clip_by_norm") as scope:
        values = _values(t, "t")
        l2sum = math_ops.reduce_sum(values * values, axes, keepdims=True)
        pred = l2sum > 0
        l2sum_safe = math_ops.where(pred, l2sum, array_ops.ones_like(l2sum))
        l2norm = math_ops.where(pred, math_ops.sqrt(l2sum_safe), l2sum)
        intermediate = values * clip_norm
        clipped = array_ops.identity(intermediate / math_ops.maximum(l2norm, clip_norm),
                                     name=scope)
        return _like(t, clipped)


def global_norm(t_list: Sequence[Any], name: str | None = None) -> Tensor:
    """``sqrt(sum(l2norm(t) ** 2 for t in t_list))``, skipping ``None`` entries."""
    if isinstance(t_list, (str, bytes)) or not hasattr(t_list, "__iter__"):
        raise TypeError("t_list should be a sequence")
    t_list = list(t_list)
    g = graph_of([t.values if isinstance(t, IndexedSlices) else t
                  for t in t_list if t is not None])
    with g.as_default(), g.name_scope(name or "global_norm"):
        values = [None if t is None else _values(t, f"t_{i}") for i, t in enumerate(t_list)]
        halves = []
        for v in values:
            if v is not None:
                with g.colocate_with(v.op):
                    halves.append(nn_ops.l2_loss(v))
        half = math_ops.reduce_sum(array_ops.stack(halves))
        two = convert_to_tensor(2.0, dtype=half.dtype)
        return math_ops.sqrt(half * two, name="global_norm")


def clip_by_global_norm(t_list: Sequence[Any], clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list, Tensor]:
    """Scale every tensor by ``clip_norm / max(global_norm, clip_norm)``; returns
    ``(list_clipped, global_norm)``. A non-finite norm makes every value NaN, as in TF."""
    if isinstance(t_list, (str, bytes)) or not hasattr(t_list, "__iter__"):
        raise TypeError("t_list should be a sequence")
    t_list = list(t_list)
    g = graph_of([t.values if isinstance(t, IndexedSlices) else t
                  for t in t_list if t is not None] + [clip_norm])
    with g.as_default():
        use_norm = global_norm(t_list, name) if use_norm is None else use_norm
    with g.as_default(), g.name_scope(name or "clip_by_global_norm") as scope:
        one = convert_to_tensor(1.0, dtype=use_norm.dtype)
        scale_for_finite = clip_norm * math_ops.minimum(1.0 / use_norm, one / clip_norm)
        scale = scale_for_finite + (use_norm - use_norm)
        values = [None if t is None else _values(t, f"t_{i}") for i, t in enumerate(t_list)]
        clipped = []
        for i, v in enumerate(values):
            if v is None:
                clipped.append(None)
                continue
            with g.colocate_with(v.op):
                clipped.append(array_ops.identity(v * scale, name=f"{scope}_{i}"))
        clipped = [None if c is None else _like(t, c)
                   for t, c in zip(t_list, clipped, strict=True)]
        return clipped, use_norm


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t) / size(t), clip_norm)`` (TF 1.x, deprecated there)."""
    g = graph_of([t, clip_norm])
    with g.as_default(), g.name_scope(name or "clip_by_average_norm") as scope:
        t = convert_to_tensor(t, name="t")
        n_element = array_ops.cast(array_ops.size(t), t.dtype)
        l2norm_inv = math_ops.rsqrt(math_ops.reduce_sum(t * t, array_ops.range_to_rank(t)))
        one = convert_to_tensor(1.0, dtype=t.dtype)
        return array_ops.identity(
            t * clip_norm * math_ops.minimum(l2norm_inv * n_element, one / clip_norm),
            name=scope)
