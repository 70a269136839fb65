"""``tf.metrics`` (TF 1.x ``metrics_impl``): streaming ``mean`` and ``accuracy``.

A metric keeps its running state in local variables ``<name>/total`` and ``<name>/count``
(collections LOCAL_VARIABLES and METRIC_VARIABLES, so ``tf.local_variables_initializer()``
resets them), and returns ``(value, update_op)``: ``value`` reads ``total / count``
(``<name>/value``, a ``DivNoNan``), ``update_op`` adds this batch and returns the new mean.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, Tensor
from tfteach.ops import array_ops, math_ops, state_ops
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.div_no_nan import div_no_nan

__all__ = ["accuracy", "mean"]


def metric_variable(shape: Any, dtype: Any, name: str) -> state_ops.Variable:
    """A zero-initialised, non-trainable local variable for a metric's state."""
    return state_ops.Variable(lambda: array_ops.zeros(shape, dtype), trainable=False,
                              collections=[GraphKeys.LOCAL_VARIABLES,
                                           GraphKeys.METRIC_VARIABLES], name=name)


def _add_to(g: Any, keys: Any, value: Tensor) -> None:
    for key in keys or ():
        g.add_to_collection(key, value)


def mean(values: Any, weights: Any = None, metrics_collections: Any = None,
         updates_collections: Any = None, name: str | None = None) -> tuple:
    """The (weighted) mean of every ``values`` seen since the local variables were
    initialised: ``(mean, update_op)``."""
    g = graph_of([values] + ([] if weights is None else [weights]))
    with g.as_default(), g.name_scope(name or "mean"):
        values = array_ops.cast(values, dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = array_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            weights = array_ops.cast(weights, dtypes.float32)
            weights = math_ops.multiply(weights, array_ops.ones_like(values))
            values = math_ops.multiply(values, weights)
            num_values = math_ops.reduce_sum(weights)
        update_total = state_ops.assign_add(total, math_ops.reduce_sum(values))
        with g.control_dependencies([values]):
            update_count = state_ops.assign_add(count, num_values)
        value = div_no_nan(total.value(), math_ops.maximum(count.value(), 0.0), name="value")
        update_op = div_no_nan(update_total, math_ops.maximum(update_count, 0.0),
                               name="update_op")
        _add_to(g, metrics_collections, value)
        _add_to(g, updates_collections, update_op)
        return value, update_op


def accuracy(labels: Any, predictions: Any, weights: Any = None,
             metrics_collections: Any = None, updates_collections: Any = None,
             name: str | None = None) -> tuple:
    """How often ``predictions`` equals ``labels``: ``(accuracy, update_op)``."""
    labels = convert_to_tensor(labels)
    predictions = convert_to_tensor(predictions)
    if not predictions.shape.is_compatible_with(labels.shape):
        raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible")
    if labels.dtype is not predictions.dtype:
        predictions = array_ops.cast(predictions, labels.dtype)
    is_correct = array_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")
