"""Reductions composed as TF composes them, with no op type of their own (so their
gradients come from the ops they use): ``tf.reduce_logsumexp`` (the max, kept out of the
gradient, is subtracted before Exp; the last op is ``AddV2`` named ``ReduceLogSumExp``),
``tf.math.reduce_variance`` / ``reduce_std`` (Mean, Sub, Square, Mean, Sqrt) and
``tf.norm`` / ``tf.linalg.norm`` (euclidean / fro, 1, inf and positive p for vectors;
euclidean, 1 and inf for matrices). No state.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.float_class_ops import is_finite

__all__ = ["norm", "reduce_logsumexp", "reduce_std", "reduce_variance"]


def _pick(new: Any, old: Any) -> Any:
    return old if new is None else new


def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool | None = None,
                     name: str | None = None, reduction_indices: Any = None,
                     keep_dims: bool | None = None) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, computed without overflow."""
    axis = _pick(axis, reduction_indices)
    keepdims = bool(_pick(keepdims, keep_dims))
    g = graph_of([input_tensor])
    with g.as_default(), g.name_scope(name or "ReduceLogSumExp") as scope:
        x = convert_to_tensor(input_tensor)
        raw_max = math_ops.reduce_max(x, axis=axis, keepdims=True)
        my_max = array_ops.stop_gradient(
            math_ops.where(is_finite(raw_max), raw_max, array_ops.zeros_like(raw_max)))
        result = math_ops.log(math_ops.reduce_sum(math_ops.exp(math_ops.subtract(x, my_max)),
                                                  axis=axis, keepdims=keepdims))
        if not keepdims:
            my_max = array_ops.reshape(my_max, array_ops.shape(result))
        return g.create_op("AddV2", [result, my_max], {"T": result.dtype},
                           name=scope).outputs[0]


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Tensor:
    """The variance of the elements over ``axis`` (the mean squared deviation)."""
    g = graph_of([input_tensor])
    with g.as_default(), g.name_scope(name or "reduce_variance"):
        x = convert_to_tensor(input_tensor)
        means = math_ops.reduce_mean(x, axis=axis, keepdims=True)
        if means.dtype.is_integer:
            raise TypeError(errors.with_hint(
                f"Input must be either real or complex. Received integer type {means.dtype}.",
                tr("cast the tensor to a float type first: tf.cast(x, tf.float32).")))
        return math_ops.reduce_mean(math_ops.square(x - means), axis=axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """The standard deviation of the elements over ``axis``."""
    g = graph_of([input_tensor])
    with g.as_default(), g.name_scope(name or "reduce_std"):
        x = convert_to_tensor(input_tensor)
        return math_ops.sqrt(reduce_variance(x, axis=axis, keepdims=keepdims))


_VECTOR_ORDS = ("euclidean", 1, 2, np.inf)
_MATRIX_ORDS = ("euclidean", "fro", 1, np.inf)


def _norm_axes(ord: Any, axis: Any) -> tuple:
    """TF's argument checks: ``(is_matrix_norm, axis as a tuple or None)``."""
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        axis = tuple(axis)
        if not all(isinstance(a, int) for a in axis) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique "
                             f"integers, got {axis}")
        if ord == 2 or ord not in _MATRIX_ORDS:
            raise errors.UnimplementedError(
                f"tfteach's tf.norm supports the matrix norms 'euclidean', 'fro', 1 and "
                f"np.inf, got ord={ord!r}",
                hint=tr("the spectral norm (ord=2) needs an SVD, which tfteach lacks."))
        return True, axis
    if not (isinstance(axis, int) or axis is None):
        raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, "
                         f"got {axis}")
    if isinstance(ord, str) and ord not in _VECTOR_ORDS or (
            not isinstance(ord, str) and (not np.isreal(ord) or ord <= 0)):
        raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
    return False, None if axis is None else (axis,)


def _abs_norm(x: Tensor, ord: Any, axis: tuple | None, is_matrix: bool) -> Tensor:
    result = math_ops.abs(x)
    if ord == 1:
        result = math_ops.reduce_sum(result, None if axis is None else axis[0], keepdims=True)
        if is_matrix:
            result = math_ops.reduce_max(result, axis[-1], keepdims=True)
    elif ord == np.inf:
        if is_matrix:
            result = math_ops.reduce_sum(result, axis[1], keepdims=True)
        result = math_ops.reduce_max(result, None if axis is None else axis[0], keepdims=True)
    else:
        total = math_ops.reduce_sum(math_ops.pow(result, ord), axis, keepdims=True)
        result = math_ops.pow(total, 1.0 / ord)
    return result


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None, keepdims: bool | None = None,
         name: str | None = None, keep_dims: bool | None = None) -> Tensor:
    """The vector norm over ``axis`` (all elements when None) or the matrix norm over a pair
    of axes."""
    keepdims = bool(_pick(keepdims, keep_dims))
    is_matrix, axis = _norm_axes(ord, axis)
    g = graph_of([tensor])
    with g.as_default(), g.name_scope(name or "norm"):
        x = convert_to_tensor(tensor)
        if isinstance(ord, str) or ord == 2:
            result = math_ops.sqrt(math_ops.reduce_sum(x * x, axis, keepdims=True))
        else:
            result = _abs_norm(x, ord, axis, is_matrix)
        return result if keepdims else array_ops.squeeze(result, axis)
