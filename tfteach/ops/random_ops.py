"""Seeded random ops: RandomStandardNormal, RandomUniform, TruncatedNormal, RandomShuffle.

Seeds follow TF's rules (``get_seed``): with a graph seed and no op seed the op seed is the
graph's op count; with neither, each session draws fresh entropy. Each op keeps its own
generator in the session's resource container, so successive runs give new numbers while
two sessions with the same seeds give the same sequence. The ops are stateful, so they keep
their device across runs.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.registry import GPU_FLOAT, not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.ops.allocation import element_count, guard_allocation, shape_dtype
from tfteach.ops.common import const_value, convert_to_tensor

DEFAULT_GRAPH_SEED = 87654321


def set_random_seed(seed: int | None) -> None:
    """Set the graph-level seed of the default graph."""
    get_default_graph().seed = seed


def get_seed(op_seed: int | None) -> tuple[int, int]:
    g = get_default_graph()
    if g.seed is not None:
        return (g.seed, g.version if op_seed is None else op_seed)
    if op_seed is not None:
        return (DEFAULT_GRAPH_SEED, op_seed)
    return (0, 0)


def _shape_from_input(op):
    dims = const_value(op.inputs[0])
    if dims is None:
        return [(op.attrs["dtype"], unknown_shape())]
    return [(op.attrs["dtype"], TensorShape([int(d) for d in np.atleast_1d(dims)]))]


def _sampler(draw):
    def kernel(ctx, shape):
        rng = ctx.resources.rng(ctx.op.name, ctx.attrs["seed"], ctx.attrs["seed2"])
        dims = tuple(int(d) for d in np.atleast_1d(ctx.device.to_host(shape)))
        count = element_count(ctx.op, dims, "would have more than 2**63 - 1 elements")
        guard_allocation(ctx, dims, ctx.attrs["dtype"], 8 * count)  # NumPy draws float64
        return ctx.device.from_host(draw(rng, dims).astype(ctx.attrs["dtype"].np))
    return kernel


def _truncated(rng, dims):
    out = rng.standard_normal(dims)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2
    return out


register_op("RandomStandardNormal", _shape_from_input,
            _sampler(lambda rng, dims: rng.standard_normal(dims)), gpu_types=GPU_FLOAT,
            dtype_attr="dtype", stateful=True)
register_op("RandomUniform", _shape_from_input, _sampler(lambda rng, dims: rng.random(dims)),
            gpu_types=GPU_FLOAT, dtype_attr="dtype", stateful=True)
register_op("TruncatedNormal", _shape_from_input, _sampler(_truncated), gpu_types=GPU_FLOAT,
            dtype_attr="dtype", stateful=True)



def _shuffle_kernel(ctx, value):
    rng = ctx.resources.rng(ctx.op.name, ctx.attrs["seed"], ctx.attrs["seed2"])
    value = ctx.device.to_host(value)
    if value.ndim == 0:
        return ctx.device.from_host(value)
    return ctx.device.from_host(value[rng.permutation(value.shape[0])])


register_op("RandomShuffle", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
            _shuffle_kernel, gpu_types=frozenset(), stateful=True)
# as TF: gradients stop at a sample (a VAE's epsilon), they do not raise LookupError
not_differentiable("RandomStandardNormal", "RandomUniform", "TruncatedNormal", "RandomShuffle")


def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """``tf.random_shuffle``: ``value`` with its first dimension in a random order."""
    s1, s2 = get_seed(seed)
    v = convert_to_tensor(value, name="value")
    return v.graph.create_op("RandomShuffle", [v], {"T": v.dtype, "seed": s1, "seed2": s2},
                             name=name or "RandomShuffle").outputs[0]


def _random(op_type: str, shape: Any, dtype: Any, seed: int | None, scope: str) -> Tensor:
    s1, s2 = get_seed(seed)
    sh = convert_to_tensor(shape, dtype=shape_dtype(shape), name="shape")
    return get_default_graph().create_op(op_type, [sh], {
        "dtype": dtypes.as_dtype(dtype), "seed": s1, "seed2": s2, "T": sh.dtype},
        name=op_type).outputs[0]


def _scaled_normal(op_type: str, shape: Any, mean: float, stddev: float, dtype: Any,
                   seed: int | None, name: str) -> Tensor:
    """``op_type`` samples * stddev + mean, built as TF builds it (so names match)."""
    g = get_default_graph()
    with g.name_scope(name) as scope:
        m = convert_to_tensor(mean, dtype=dtype, name="mean")
        s = convert_to_tensor(stddev, dtype=dtype, name="stddev")
        rnd = _random(op_type, shape, dtype, seed, scope)
        mul = g.create_op("Mul", [rnd, s], {"T": m.dtype}, name="mul").outputs[0]
        return g.create_op("Add", [mul, m], {"T": m.dtype}, name=scope).outputs[0]


def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = dtypes.float32,
                  seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a normal distribution (``RandomStandardNormal * stddev + mean``)."""
    return _scaled_normal("RandomStandardNormal", shape, mean, stddev, dtype, seed,
                          name or "random_normal")


def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0,
                     dtype: Any = dtypes.float32, seed: int | None = None,
                     name: str | None = None) -> Tensor:
    """Normal samples re-drawn until within two standard deviations."""
    return _scaled_normal("TruncatedNormal", shape, mean, stddev, dtype, seed,
                          name or "truncated_normal")


def random_uniform(shape: Any, minval: float = 0, maxval: float | None = None,
                   dtype: Any = dtypes.float32, seed: int | None = None,
                   name: str | None = None) -> Tensor:
    """Uniform samples in [minval, maxval) (maxval defaults to 1)."""
    g = get_default_graph()
    maxval = 1 if maxval is None else maxval
    with g.name_scope(name or "random_uniform") as scope:
        lo = convert_to_tensor(minval, dtype=dtype, name="min")
        hi = convert_to_tensor(maxval, dtype=dtype, name="max")
        rnd = _random("RandomUniform", shape, dtype, seed, scope)
        span = g.create_op("Sub", [hi, lo], {"T": lo.dtype}, name="sub").outputs[0]
        mul = g.create_op("Mul", [rnd, span], {"T": lo.dtype}, name="mul").outputs[0]
        return g.create_op("Add", [mul, lo], {"T": lo.dtype}, name=scope).outputs[0]
