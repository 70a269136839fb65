"""N-dimensional indexing: GatherNd (``tf.gather_nd``: slices of ``params`` picked by the
index tuples in the last axis of ``indices``) and ScatterNd (``tf.scatter_nd``: updates
added into zeros of a given shape at such index tuples), each the other's gradient, as in
TF. No state.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.ops import array_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of, shape_error


def _index_tuple(ctx, indices, shape: tuple):
    """The index arrays of ``indices`` (last axis: one coordinate per dimension of
    ``shape``), after TF's range check."""
    host = ctx.device.to_host(indices)
    depth = host.shape[-1]
    flat = host.reshape(-1, depth)
    bad = ((flat < 0) | (flat >= np.asarray(shape[:depth]))).any(axis=1)
    if bad.any():
        n = int(bad.argmax())
        where = ",".join(str(i) for i in _multi_index(n, host.shape[:-1]))
        raise errors.InvalidArgumentError(
            f"indices[{where}] = [{', '.join(str(int(v)) for v in flat[n])}] does not index "
            f"into param shape [{','.join(str(d) for d in shape)}]")
    return tuple(indices[..., i] for i in range(depth))


def _multi_index(n: int, shape: tuple) -> list:
    """The multi-index of flat position ``n`` in ``shape`` (row-major)."""
    out = []
    for d in reversed(shape):
        n, r = divmod(n, d)
        out.append(r)
    return list(reversed(out)) or [0]


# ---- GatherNd ----------------------------------------------------------------------------------
def _gather_nd_shape(op):
    params, indices = op.inputs
    if params.shape.ndims is None or indices.shape.ndims is None or \
            indices.shape.dims[-1] is None:
        return [(params.dtype, unknown_shape())]
    depth = indices.shape.dims[-1]
    if depth > params.shape.ndims:
        raise shape_error(op, f"indices.shape[-1] must be <= params.rank, but saw indices "
                              f"shape: {indices.shape.bracket()} and params shape: "
                              f"{params.shape.bracket()}")
    return [(params.dtype, TensorShape(list(indices.shape.dims[:-1]) +
                                       list(params.shape.dims[depth:])))]


def _gather_nd_kernel(ctx, params, indices):
    return params[_index_tuple(ctx, indices, params.shape)]


register_op("GatherNd", _gather_nd_shape, _gather_nd_kernel)


def gather_nd(params: Any, indices: Any, name: str | None = None,
              batch_dims: int = 0) -> Tensor:
    """``params[indices[..., 0], indices[..., 1], ...]`` for each index tuple."""
    if batch_dims:
        raise NotImplementedError("tfteach's tf.gather_nd supports batch_dims=0 only.")
    g = graph_of([params, indices])
    with g.as_default(), g.name_scope(name or "GatherNd") as scope:
        p = convert_to_tensor(params, name="params")
        i = convert_to_tensor(indices, name="indices")
        return g.create_op("GatherNd", [p, i], {"Tparams": p.dtype, "Tindices": i.dtype},
                           name=scope).outputs[0]


# ---- ScatterNd ---------------------------------------------------------------------------------
def _scatter_nd_shape(op):
    indices, updates, shape = op.inputs
    value = const_value(shape)
    if value is None:
        return [(updates.dtype, unknown_shape())]
    return [(updates.dtype, TensorShape([int(d) for d in value.reshape(-1)]))]


def _scatter_nd_kernel(ctx, indices, updates, shape):
    xp = ctx.xp
    dims = tuple(int(d) for d in ctx.device.to_host(shape).reshape(-1))
    out = xp.zeros(dims, dtype=updates.dtype)
    xp.add.at(out, _index_tuple(ctx, indices, dims), updates)
    return out


register_op("ScatterNd", _scatter_nd_shape, _scatter_nd_kernel)


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at the index tuples of ``indices``."""
    g = graph_of([indices, updates, shape])
    with g.as_default(), g.name_scope(name or "ScatterNd") as scope:
        i = convert_to_tensor(indices, name="indices")
        u = convert_to_tensor(updates, name="updates")
        s = convert_to_tensor(shape, dtype=i.dtype, name="shape")
        return g.create_op("ScatterNd", [i, u, s], {"T": u.dtype, "Tindices": i.dtype},
                           name=scope).outputs[0]


def _gather_nd_grad(op, grad):
    params, indices = op.inputs
    shape = array_ops.shape(params, out_type=indices.dtype)
    return [scatter_nd(indices, grad, shape), None]


set_gradient("GatherNd", _gather_nd_grad)
set_gradient("ScatterNd", lambda op, grad: [None, gather_nd(grad, op.inputs[0]), None])
