"""Multinomial (``tf.multinomial``, ``tf.random.categorical``): ``num_samples`` class
indices per row of unnormalised log-probabilities, drawn from ``softmax(logits)``. Seeded as
the other random ops (``random_ops.get_seed``, a generator per op in the session's
resources), so runs give new draws and equal seeds equal sequences (not TF's numbers: its
generator differs). Stateful; not differentiable. ``-inf`` logits are never drawn.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.common import const_value, convert_to_tensor, graph_of, shape_error
from tfteach.ops.random_ops import get_seed

__all__ = ["categorical", "multinomial"]


def _shape(op: Any) -> list:
    logits, num = op.inputs
    out = op.attrs["output_dtype"]
    if logits.shape.ndims not in (None, 2):
        raise shape_error(op, f"Shape must be rank 2 but is rank {logits.shape.ndims}")
    n = const_value(num)
    rows = None if logits.shape.ndims is None else logits.shape.dims[0]
    if n is None and rows is None:
        return [(out, unknown_shape(2))]
    return [(out, TensorShape([rows, None if n is None else int(n)]))]


def _multinomial_kernel(ctx: Any, logits: Any, num: Any) -> Any:
    n = int(ctx.device.to_host(num))
    if n < 0:
        raise errors.InvalidArgumentError(f"num_samples should be nonnegative, got {n}",
                                          op=ctx.op, hint=tr("ask for 0 or more samples."))
    if logits.shape[1] == 0:
        raise errors.InvalidArgumentError(
            "num_classes should be positive, got 0", op=ctx.op,
            hint=tr("each row of logits needs at least one class."))
    x = np.asarray(ctx.device.to_host(logits), dtype=np.float64)
    p = np.exp(x - x.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    rng = ctx.resources.rng(ctx.op.name, ctx.attrs["seed"], ctx.attrs["seed2"])
    u = rng.random((x.shape[0], n))
    cdf = np.cumsum(p, axis=1)
    draws = np.stack([np.searchsorted(c, row, side="right") for c, row in zip(cdf, u, strict=True)]) \
        if x.shape[0] else np.zeros((0, n), np.int64)
    draws = np.minimum(draws, x.shape[1] - 1)
    return ctx.device.from_host(draws.astype(ctx.attrs["output_dtype"].np))


register_op("Multinomial", _shape, _multinomial_kernel, gpu_types=frozenset(), stateful=True)
not_differentiable("Multinomial")


def _draw(scope_name: str, logits: Any, num_samples: Any, seed: int | None,
          output_dtype: Any) -> Tensor:
    g = graph_of([logits, num_samples])
    with g.as_default(), g.name_scope(scope_name):
        x = convert_to_tensor(logits, name="logits")
        n = convert_to_tensor(num_samples, dtype=dtypes.int32, name="num_samples")
        seed1, seed2 = get_seed(seed)
        return g.create_op("Multinomial", [x, n], {
            "T": x.dtype, "seed": seed1, "seed2": seed2,
            "output_dtype": dtypes.as_dtype(output_dtype or dtypes.int64)},
            name="Multinomial").outputs[0]


def multinomial(logits: Any, num_samples: Any, seed: int | None = None, name: str | None = None,
                output_dtype: Any = None) -> Tensor:
    """``[batch, num_samples]`` class indices drawn from each row's ``softmax(logits)``."""
    return _draw(name or "multinomial", logits, num_samples, seed, output_dtype)


def categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """``tf.random.categorical``: the same draws as ``tf.multinomial``."""
    return _draw(name or "categorical", logits, num_samples, seed, dtype)
