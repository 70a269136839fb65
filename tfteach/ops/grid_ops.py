"""Evenly spaced values and coordinate grids, composed as TF composes them: ``tf.linspace``
/ ``tf.lin_space`` (``start``, the interior points ``start + i * delta``, ``stop``, then a
Slice to ``num``, so the last value is exactly ``stop``) and ``tf.meshgrid`` (each input
reshaped along its own axis, times a Fill of ones; ``indexing='xy'`` or ``'ij'``). No op
type of their own; no state.
"""
from __future__ import annotations

from typing import Any

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of
from tfteach.ops.manip_ops import concat, slice_, stack
from tfteach.ops.range_ops import range_

__all__ = ["linspace", "meshgrid"]


def _scalar(t: Tensor, what: str) -> None:
    if t.shape.ndims != 0:
        raise errors.UnimplementedError(
            f"tfteach's tf.linspace takes a scalar {what}, got shape {t.shape}",
            hint=tr("call tf.linspace once per row, or compute start + tf.range(num) * delta."))


def linspace(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``, both included."""
    g = graph_of([start, stop, num])
    with g.as_default(), g.name_scope(name or "linspace"):
        start = convert_to_tensor(start, name="start")
        stop = convert_to_tensor(stop, dtype=start.dtype, name="stop")
        num = convert_to_tensor(num, name="num")
        _scalar(start, "start")
        _scalar(stop, "stop")
        steps = math_ops.maximum(num - 1, 1)
        delta = (stop - start) / array_ops.cast(steps, start.dtype)
        inner = start + array_ops.cast(range_(1, steps), start.dtype) * delta
        values = concat([array_ops.reshape(start, [1]), inner, array_ops.reshape(stop, [1])], 0)
        n = const_value(num)
        size = [int(n)] if n is not None else array_ops.reshape(num, [1])
        return slice_(values, [0], size)


def meshgrid(*args: Any, **kwargs: Any) -> list:
    """Coordinate matrices from coordinate vectors (``indexing='xy'``, as numpy, or
    ``'ij'``)."""
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", "meshgrid")
    if kwargs:
        raise TypeError(f"'{next(iter(kwargs))}' is an invalid keyword argument for this "
                        "function")
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing parameter must be either 'xy' or 'ij'")
    if not args:
        return []
    g = graph_of(list(args))
    with g.as_default(), g.name_scope(name):
        ndim = len(args)
        ones_shape = [1] * ndim
        output = [array_ops.reshape(stack(x), ones_shape[:i] + [-1] + ones_shape[i + 1:])
                  for i, x in enumerate(args)]
        xs = [convert_to_tensor(x) for x in args]
        sizes = [x.shape.num_elements() if x.shape.is_fully_defined() else array_ops.size(x)
                 for x in xs]
        if indexing == "xy" and ndim > 1:
            output[0] = array_ops.reshape(output[0], [1, -1] + [1] * (ndim - 2))
            output[1] = array_ops.reshape(output[1], [-1, 1] + [1] * (ndim - 2))
            sizes[0], sizes[1] = sizes[1], sizes[0]
        mult = array_ops.ones(sizes, xs[0].dtype)
        return [x * mult for x in output]


lin_space = linspace
