"""``tf.losses`` (TF 1.x ``losses_impl`` and ``util``): weighted losses and the LOSSES
collection.

Each loss computes per-element losses under its own scope (``mean_squared_error/...``), then
``compute_weighted_loss`` casts to float32, multiplies by ``weights`` and reduces as
``reduction`` says; the result (``<scope>/value`` for the averaging reductions, a
``DivNoNan``) is added to ``GraphKeys.LOSSES``. ``Reduction.SUM_BY_NONZERO_WEIGHTS``
(the default) divides the weighted sum by the number of non-zero weights, broadcast to the
losses' shape. TF's ``assert_broadcastable`` ops are not built.
"""
from __future__ import annotations

from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, Tensor, get_default_graph
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops, nn_impl, nn_ops
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.div_no_nan import div_no_nan

__all__ = ["Reduction", "absolute_difference", "add_loss", "compute_weighted_loss",
           "get_losses", "get_regularization_loss", "get_regularization_losses",
           "get_total_loss", "hinge_loss", "huber_loss", "log_loss", "mean_squared_error",
           "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy"]


class Reduction:
    """How a weighted loss is reduced (TF's string values)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: str) -> None:
        if key not in cls.all():
            raise ValueError(with_hint(f"Invalid Reduction Key {key}.", tr(
                "use one of tf.losses.Reduction's names, e.g. "
                "tf.losses.Reduction.MEAN or tf.losses.Reduction.SUM.")))


# ---- the collection ------------------------------------------------------------------------
def add_loss(loss: Any, loss_collection: str | None = GraphKeys.LOSSES) -> None:
    """Add ``loss`` to ``loss_collection`` (nothing when it is None or empty)."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list:
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list:
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None,
                            name: str = "total_regularization_loss") -> Tensor:
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return convert_to_tensor(0.0)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Tensor:
    """The sum (``AddN``) of the LOSSES collection, plus the regularization losses."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope)
    return math_ops.add_n(losses, name=name)


# ---- weighting and reduction ---------------------------------------------------------------
def _num_elements(losses: Tensor) -> Tensor:
    with losses.graph.name_scope("num_elements") as scope:
        return array_ops.cast(array_ops.size(losses, name=scope), losses.dtype)


def _num_present(losses: Tensor, weights: Any) -> Tensor:
    """How many of the (broadcast) weights are non-zero."""
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with losses.graph.name_scope("num_present") as scope:
        weights = array_ops.cast(weights, dtypes.float32)
        present = math_ops.where(math_ops.equal(weights, 0.0), array_ops.zeros_like(weights),
                                 array_ops.ones_like(weights))
        with losses.graph.name_scope("broadcast_weights"):
            present = math_ops.multiply(present, array_ops.ones_like(losses))
        return math_ops.reduce_sum(present, name=scope)


def _reduce(weighted: Tensor, losses: Tensor, weights: Any, reduction: str) -> Tensor:
    if reduction == Reduction.NONE:
        return weighted
    loss = math_ops.reduce_sum(weighted)
    if reduction == Reduction.MEAN:
        count = math_ops.reduce_sum(array_ops.ones_like(losses) * weights)
    elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
        count = _num_present(losses, weights)
    elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
        count = _num_elements(losses)
    else:
        return loss
    return div_no_nan(math_ops.reduce_sum(loss), count, name="value")


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: str | None = None,
                          loss_collection: str | None = GraphKeys.LOSSES,
                          reduction: str = Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """``losses * weights`` reduced as ``reduction`` says, added to ``loss_collection``."""
    Reduction.validate(reduction)
    g = graph_of([losses, weights])
    with g.as_default(), g.name_scope(scope or "weighted_loss"):
        losses = convert_to_tensor(losses)
        input_dtype = losses.dtype
        losses = array_ops.cast(losses, dtypes.float32)
        weights = array_ops.cast(weights, dtypes.float32)
        weighted = math_ops.multiply(losses, weights)
        loss = array_ops.cast(_reduce(weighted, losses, weights, reduction), input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _pair(labels: Any, predictions: Any) -> tuple:
    if labels is None:
        raise ValueError("labels must not be None.")
    if predictions is None:
        raise ValueError("predictions must not be None.")
    predictions = array_ops.cast(predictions, dtypes.float32)
    labels = array_ops.cast(labels, dtypes.float32)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(with_hint(
            f"Shapes {predictions.shape} and {labels.shape} are incompatible",
            tr("labels and predictions need the same shape; reshape one, e.g. "
               "tf.reshape(labels, [-1, 1]).")))
    return labels, predictions


# ---- the losses ----------------------------------------------------------------------------
_SUM_NZ = Reduction.SUM_BY_NONZERO_WEIGHTS
_LOSSES = GraphKeys.LOSSES


def _loss(default_scope: str, pair: tuple, weights: Any, options: tuple, per_element: Any,
          cast_pair: bool = True) -> Tensor:
    """Build ``per_element(labels, predictions)`` in the loss's scope (labels and predictions
    cast to float32 and shape-checked first when ``cast_pair``), then weight and reduce it.
    ``options``: the loss's ``(scope, loss_collection, reduction)``."""
    scope, loss_collection, reduction = options
    g = graph_of([*pair, weights])
    with g.as_default(), g.name_scope(scope or default_scope) as scope:
        losses = per_element(*(_pair(*pair) if cast_pair else pair))
        return compute_weighted_loss(losses, weights, scope, loss_collection,
                                     reduction=reduction)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0,
                       scope: str | None = None, loss_collection: str | None = _LOSSES,
                       reduction: str = _SUM_NZ) -> Tensor:
    """``(predictions - labels) ** 2``, weighted and reduced."""
    return _loss("mean_squared_error", (labels, predictions), weights,
                 (scope, loss_collection, reduction),
                 lambda y, p: math_ops.squared_difference(p, y))


def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0,
                        scope: str | None = None, loss_collection: str | None = _LOSSES,
                        reduction: str = _SUM_NZ) -> Tensor:
    """``|predictions - labels|``, weighted and reduced."""
    return _loss("absolute_difference", (labels, predictions), weights,
                 (scope, loss_collection, reduction),
                 lambda y, p: math_ops.abs(math_ops.subtract(p, y)))


def _log_loss(labels: Tensor, predictions: Tensor, epsilon: float) -> Tensor:
    return (-math_ops.multiply(labels, math_ops.log(predictions + epsilon))
            - math_ops.multiply(1 - labels, math_ops.log(1 - predictions + epsilon)))


def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7,
             scope: str | None = None, loss_collection: str | None = _LOSSES,
             reduction: str = _SUM_NZ) -> Tensor:
    """``-y log(p + eps) - (1 - y) log(1 - p + eps)`` for probabilities ``p``."""
    return _loss("log_loss", (labels, predictions), weights,
                 (scope, loss_collection, reduction), lambda y, p: _log_loss(y, p, epsilon))


def _huber(labels: Tensor, predictions: Tensor, delta: float) -> Tensor:
    abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
    quadratic = math_ops.minimum(abs_error, delta)
    linear = math_ops.subtract(abs_error, quadratic)
    return math_ops.add(math_ops.multiply(0.5, math_ops.multiply(quadratic, quadratic)),
                        math_ops.multiply(delta, linear))


def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0,
               scope: str | None = None, loss_collection: str | None = _LOSSES,
               reduction: str = _SUM_NZ) -> Tensor:
    """Quadratic within ``delta`` of the label, linear beyond."""
    return _loss("huber_loss", (labels, predictions), weights,
                 (scope, loss_collection, reduction), lambda y, p: _huber(y, p, delta))


def _hinge(labels: Tensor, logits: Tensor) -> Tensor:
    all_ones = array_ops.ones_like(labels)
    signs = math_ops.subtract(2 * labels, all_ones)
    return nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(signs, logits)))


def hinge_loss(labels: Any, logits: Any, weights: Any = 1.0, scope: str | None = None,
               loss_collection: str | None = _LOSSES, reduction: str = _SUM_NZ) -> Tensor:
    """``max(0, 1 - (2 * labels - 1) * logits)`` for 0/1 labels."""
    return _loss("hinge_loss", (labels, logits), weights,
                 (scope, loss_collection, reduction), _hinge)


def _sigmoid_xent(labels: Any, logits: Any, label_smoothing: float) -> Tensor:
    logits = convert_to_tensor(logits)
    labels = array_ops.cast(labels, logits.dtype)
    if label_smoothing > 0:
        labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
    return nn_impl.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                     name="xentropy")


def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str | None = _LOSSES,
                          reduction: str = _SUM_NZ) -> Tensor:
    """The logistic loss of each logit against its 0/1 label (smoothed towards 0.5)."""
    return _loss("sigmoid_cross_entropy_loss", (multi_class_labels, logits), weights,
                 (scope, loss_collection, reduction),
                 lambda y, x: _sigmoid_xent(y, x, label_smoothing), cast_pair=False)


def _softmax_xent(labels: Any, logits: Any, label_smoothing: float) -> Tensor:
    logits = convert_to_tensor(logits)
    labels = array_ops.cast(labels, logits.dtype)
    if label_smoothing > 0:
        classes = array_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
        labels = labels * (1.0 - label_smoothing) + label_smoothing / classes
    labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return nn_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                       name="xentropy")


def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: str | None = _LOSSES,
                          reduction: str = _SUM_NZ) -> Tensor:
    """Softmax cross-entropy against one-hot labels (smoothed towards uniform)."""
    return _loss("softmax_cross_entropy_loss", (onehot_labels, logits), weights,
                 (scope, loss_collection, reduction),
                 lambda y, x: _softmax_xent(y, x, label_smoothing), cast_pair=False)


def _sparse_xent(labels: Any, logits: Any) -> Tensor:
    return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                           name="xentropy")


def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0,
                                 scope: str | None = None,
                                 loss_collection: str | None = _LOSSES,
                                 reduction: str = _SUM_NZ) -> Tensor:
    """Softmax cross-entropy against class indices."""
    return _loss("sparse_softmax_cross_entropy_loss", (labels, logits), weights,
                 (scope, loss_collection, reduction), _sparse_xent, cast_pair=False)
