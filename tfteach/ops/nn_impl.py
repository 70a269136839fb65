"""``tf.nn`` composites from TF's ``nn_impl``: ``l2_normalize``,
``sigmoid_cross_entropy_with_logits``, ``weighted_cross_entropy_with_logits``.

No op types of their own: each builds TF's ops in TF's order under TF's scope name
(``l2_normalize``, ``logistic_loss``), so ``tf.gradients`` differentiates them through those
ops. The logistic loss uses TF's numerically stable form
``max(x, 0) - x * z + log1p(exp(-|x|))``.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.ops import array_ops, math_ops, nn_ops
from tfteach.ops.common import convert_to_tensor, graph_of

__all__ = ["l2_normalize", "sigmoid_cross_entropy_with_logits",
           "weighted_cross_entropy_with_logits"]


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: Any = None) -> Tensor:
    """``x / sqrt(max(sum(x ** 2, axis), epsilon))`` (``dim`` is TF 1.x's old ``axis``)."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    g = graph_of([x])
    with g.as_default(), g.name_scope(name or "l2_normalize") as scope:
        x = convert_to_tensor(x, name="x")
        square_sum = math_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)


def _labels_logits(labels: Any, logits: Any) -> tuple:
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")
    logits = convert_to_tensor(logits, name="logits")
    labels = convert_to_tensor(labels, dtype=logits.dtype, name="labels")
    if not logits.shape.is_compatible_with(labels.shape):
        raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs "
                         f"{labels.shape})")
    return labels, logits


def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                      name: str | None = None) -> Tensor:
    """Element-wise logistic loss of ``logits`` against 0/1 (or soft) ``labels``."""
    g = graph_of([labels, logits])
    with g.as_default(), g.name_scope(name or "logistic_loss") as scope:
        labels, logits = _labels_logits(labels, logits)
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = logits >= zeros
        relu_logits = math_ops.where(cond, logits, zeros)
        neg_abs_logits = math_ops.where(cond, -logits, logits)
        return math_ops.add_v2(relu_logits - logits * labels,
                            math_ops.log1p(math_ops.exp(neg_abs_logits)), name=scope)


def weighted_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                       pos_weight: Any = None, name: str | None = None,
                                       targets: Any = None) -> Tensor:
    """The logistic loss with the positive term weighted by ``pos_weight`` (``targets=``
    is TF 1.x's name for ``labels``)."""
    if labels is not None and targets is not None:
        raise ValueError("Can not specify both labels and targets.")
    labels = targets if labels is None else labels
    g = graph_of([labels, logits])
    with g.as_default(), g.name_scope(name or "logistic_loss") as scope:
        labels, logits = _labels_logits(labels, logits)
        log_weight = 1 + (pos_weight - 1) * labels
        softplus_neg = (math_ops.log1p(math_ops.exp(-math_ops.abs(logits)))
                        + nn_ops.relu(-logits))
        return math_ops.add_v2((1 - labels) * logits, log_weight * softplus_neg, name=scope)
