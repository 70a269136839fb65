"""Rows by index: ``gather``, ``unsorted_segment_sum``, ``unique``, ``dynamic_stitch``.

``GatherV2`` reads rows of ``params``; its gradient is an ``IndexedSlices`` (the incoming
gradient reshaped to one row per index, those indices, and ``params``'s shape) instead of a
dense tensor, as in TF: training an embedding then updates only the rows a batch used.
``UnsortedSegmentSum`` adds rows into segments (repeated ids add up, negative ids are
dropped); it turns an IndexedSlices back into a dense tensor, the conversion this module
registers for ``convert_to_tensor``. ``Unique`` and ``DynamicStitch`` serve optimizers
(summing repeated indices) and ``embedding_lookup`` over several tables.

Kernels check indices on the host and raise TF's ``InvalidArgumentError`` text.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.framework.registry import (ALL_TYPES, GPU_FLOAT, not_differentiable,
                                        passes_indexed_slices, register_op, set_gradient)
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import (bad_index, const_value, convert_to_tensor, graph_of,
                                index_add, register_tensor_conversion, shape_error)


def _host(ctx: Any, t: Any) -> np.ndarray:
    return np.asarray(ctx.device.to_host(t))


def _check_range(ctx: Any, indices: Any, limit: int, text: str, negatives_ok: bool = False,
                 what: str = "indices") -> None:
    bad = bad_index(_host(ctx, indices), limit, negatives_ok)
    if bad is not None:
        pos, value = bad
        raise errors.InvalidArgumentError(
            f"{what}[{pos}] = {value} {text.format(limit=limit)}", op=ctx.op,
            hint=tr("every value of {what} must pick an existing row: 0 <= index < {limit}.",
                    what=what, limit=limit))


# ---- GatherV2 ------------------------------------------------------------------------------
def _gather_axis(op) -> int | None:
    a, rank = const_value(op.inputs[2]), op.inputs[0].shape.ndims
    if a is None:
        return None
    a = int(a)
    if rank is not None and not -rank <= a < rank:
        raise shape_error(op, f"Shape must be at least rank {(a if a >= 0 else -a - 1) + 1} "
                              f"but is rank {rank}")
    return a + rank if a < 0 and rank is not None else a


def _gather_shape(op):
    params, indices, _ = op.inputs
    ax = _gather_axis(op)
    if ax is None or params.shape.dims is None or indices.shape.dims is None:
        return [(params.dtype, unknown_shape())]
    p = params.shape.dims
    return [(params.dtype, TensorShape(p[:ax] + indices.shape.dims + p[ax + 1:]))]


def _gather_kernel(ctx, params, indices, axis):
    ax = int(_host(ctx, axis))
    ax = ax + params.ndim if ax < 0 else ax
    _check_range(ctx, indices, params.shape[ax], "is not in [0, {limit})")
    return ctx.xp.take(params, indices, axis=ax)


register_op("GatherV2", _gather_shape, _gather_kernel, gpu_types=ALL_TYPES,
            dtype_attr="Tparams")


def _params_shape(params: Tensor) -> Tensor:
    """``params``'s shape, beside it (a constant when known, as TF's graph-mode ``shape``)."""
    g = params.graph
    with g.colocate_with(params.op):
        if params.shape.is_fully_defined():
            return array_ops.constant(params.shape.as_list(), dtype=dtypes.int32, name="Shape")
        return array_ops.shape(params)


def _gather_grad(op, grad):
    params, indices, _ = op.inputs
    ax = _gather_axis(op)
    if ax is None:
        raise NotImplementedError("tfteach differentiates tf.gather only along a constant axis.")
    dense_shape = _params_shape(params)
    if ax != 0:
        return [_gather_grad_dense(params, indices, grad, ax, dense_shape), None, None]
    n, tail = indices.shape.num_elements(), params.shape.dims
    if n is not None and tail is not None and all(d is not None for d in tail[1:]):
        values_shape, flat = [n] + list(tail[1:]), [n]
    else:
        flat = array_ops.expand_dims(array_ops.size(indices), 0)
        values_shape = array_ops.concat([flat, array_ops.slice_(dense_shape, [1], [-1])], 0)
    values = array_ops.reshape(grad, values_shape)
    return [IndexedSlices(values, array_ops.reshape(indices, flat), dense_shape), None, None]


def _gather_grad_dense(params: Tensor, indices: Tensor, grad: Tensor, ax: int,
                       dense_shape: Tensor) -> Tensor:
    """Along axis ``ax`` > 0: move that axis first, sum rows by index, move it back (TF)."""
    rank = params.shape.ndims
    if rank is None:
        raise NotImplementedError("tfteach differentiates tf.gather along an axis > 0 only "
                                  "for params of known rank.")
    outer = array_ops.slice_(dense_shape, [0], [ax])
    inner = array_ops.slice_(dense_shape, [ax + 1], [-1])
    values = array_ops.reshape(grad, array_ops.concat([outer, [-1], inner], 0))
    first = array_ops.transpose(values, [ax] + list(range(ax)) + list(range(ax + 1, rank)))
    rows = array_ops.reshape(array_ops.slice_(dense_shape, [ax], [1]), [])
    summed = unsorted_segment_sum(first, array_ops.reshape(indices, [-1]), rows)
    return array_ops.transpose(summed, list(range(1, ax + 1)) + [0] + list(range(ax + 1, rank)))


set_gradient("GatherV2", _gather_grad)


def gather(params: Any, indices: Any, validate_indices: Any = None, name: str | None = None,
           axis: Any = None, batch_dims: int = 0) -> Tensor:
    """``tf.gather``: the slices of ``params`` along ``axis`` (default 0) at ``indices``.

    Its gradient with respect to ``params`` (axis 0) is an ``IndexedSlices``."""
    if batch_dims != 0:
        raise NotImplementedError("tfteach's tf.gather supports batch_dims=0 only.")
    g = graph_of([params, indices])
    with g.as_default(), g.name_scope(name or "GatherV2") as scope:
        p = convert_to_tensor(params, name="params")
        i = convert_to_tensor(indices, name="indices")
        if not i.dtype.is_integer:
            raise TypeError(errors.with_hint(
                f"Value passed to parameter 'indices' has DataType {i.dtype.name} not in list "
                "of allowed values: int32, int64",
                tr("indices are row numbers; cast them with tf.cast(indices, tf.int32).")))
        a = convert_to_tensor(0 if axis is None else axis, dtype=i.dtype, name="axis")
        return g.create_op("GatherV2", [p, i, a], {"Tparams": p.dtype, "Tindices": i.dtype,
                           "Taxis": a.dtype, "batch_dims": 0}, name=scope).outputs[0]


# ---- UnsortedSegmentSum ----------------------------------------------------------------------
def _segment_sum_shape(op):
    data, ids, num = op.inputs
    n = const_value(num)
    if data.shape.dims is None or ids.shape.dims is None:
        return [(data.dtype, unknown_shape())]
    rows = None if n is None else int(n)
    return [(data.dtype, TensorShape((rows,) + data.shape.dims[len(ids.shape.dims):]))]


def _segment_sum_kernel(ctx, data, ids, num):
    n = int(_host(ctx, num))
    _check_range(ctx, ids, n, "is out of range [0, {limit})", negatives_ok=True,
                 what="segment_ids")
    xp = ctx.xp
    flat_ids = xp.reshape(ids, (-1,))
    rows = xp.reshape(data, (flat_ids.shape[0],) + data.shape[ids.ndim:])
    keep = flat_ids >= 0
    out = xp.zeros((n,) + data.shape[ids.ndim:], dtype=data.dtype)
    index_add(xp, out, flat_ids[keep], rows[keep])
    return out


register_op("UnsortedSegmentSum", _segment_sum_shape, _segment_sum_kernel, gpu_types=GPU_FLOAT)


def _segment_sum_grad(op, grad):
    """TF's _GatherDropNegatives: each row gets its segment's gradient (0 for dropped ids)."""
    data, ids = op.inputs[:2]
    if data.shape.ndims is None or ids.shape.ndims is None:
        raise NotImplementedError("UnsortedSegmentSum's gradient needs tensors of known rank.")
    gathered = gather(grad, math_ops.maximum(ids, array_ops.zeros_like(ids)))
    keep = array_ops.cast(math_ops.greater_equal(ids, array_ops.zeros_like(ids)), grad.dtype)
    for _ in range(data.shape.ndims - ids.shape.ndims):
        keep = array_ops.expand_dims(keep, -1)
    return [gathered * keep, None, None]


set_gradient("UnsortedSegmentSum", _segment_sum_grad)


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """``out[i] = sum of data[j] over j with segment_ids[j] == i`` (negative ids dropped)."""
    g = graph_of([data, segment_ids, num_segments])
    with g.as_default():
        d = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        n = convert_to_tensor(num_segments, name="num_segments")
    return g.create_op("UnsortedSegmentSum", [d, ids, n], {
        "T": d.dtype, "Tindices": ids.dtype, "Tnumsegments": n.dtype},
        name=name or "UnsortedSegmentSum").outputs[0]


# ---- Unique ----------------------------------------------------------------------------------
def _unique_shape(op):
    x = op.inputs[0]
    return [(x.dtype, TensorShape([None])), (op.attrs["out_idx"], x.shape)]


def _unique_kernel(ctx, x):
    host = _host(ctx, x)
    _, first, inverse = np.unique(host, return_index=True, return_inverse=True)
    order = np.argsort(first)                      # TF: in order of first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = rank[inverse.reshape(-1)].astype(ctx.attrs["out_idx"].np)
    return ctx.device.from_host(host[np.sort(first)]), ctx.device.from_host(idx)


register_op("Unique", _unique_shape, _unique_kernel)


def unique(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> tuple:
    """``y, idx = tf.unique(x)``: the distinct values of 1-D ``x`` in order of first
    appearance, and for each element of ``x`` the position of its value in ``y``."""
    t = convert_to_tensor(x)
    op = t.graph.create_op("Unique", [t], {"T": t.dtype, "out_idx": dtypes.as_dtype(out_idx)},
                           name=name or "Unique")
    return op.outputs[0], op.outputs[1]


# ---- DynamicStitch ---------------------------------------------------------------------------
def _stitch_shape(op):
    n = op.attrs["N"]
    indices, data = op.inputs[:n], op.inputs[n:]
    if data[0].shape.dims is None or indices[0].shape.dims is None:
        return [(data[0].dtype, unknown_shape())]
    return [(data[0].dtype, TensorShape((None,) + data[0].shape.dims[len(indices[0].shape.dims):]))]


def _stitch_kernel(ctx, *args):
    n = ctx.attrs["N"]
    xp = ctx.xp
    indices = [_host(ctx, i).reshape(-1) for i in args[:n]]
    data = args[n:]
    tail = data[0].shape[args[0].ndim:]
    size = max((int(i.max()) + 1 for i in indices if i.size), default=0)
    out = xp.zeros((size,) + tail, dtype=data[0].dtype)
    for idx, d in zip(indices, data, strict=True):
        out[xp.asarray(idx)] = xp.reshape(d, (idx.size,) + tail)
    return out


def _stitch_grad(op, grad):
    """Each data input gets the rows its indices went to (TF's _DynamicStitchGrads)."""
    n = op.attrs["N"]
    return [None] * n + [gather(grad, i) for i in op.inputs[:n]]


for _type in ("DynamicStitch", "ParallelDynamicStitch"):
    register_op(_type, _stitch_shape, _stitch_kernel, gpu_types=GPU_FLOAT)
    set_gradient(_type, _stitch_grad)


def dynamic_stitch(indices: list, data: list, name: str | None = None,
                   op_type: str = "DynamicStitch") -> Tensor:
    """``merged[indices[m][i]] = data[m][i]``: interleave ``data`` back by position."""
    g = graph_of(list(indices) + list(data))
    with g.as_default():
        idx = [convert_to_tensor(i, dtype=dtypes.int32, name="indices") for i in indices]
        ds = [convert_to_tensor(d, name="data") for d in data]
    return g.create_op(op_type, idx + ds, {"N": len(idx), "T": ds[0].dtype},
                       name=name or op_type).outputs[0]


def parallel_dynamic_stitch(indices: list, data: list, name: str | None = None) -> Tensor:
    return dynamic_stitch(indices, data, name, op_type="ParallelDynamicStitch")


not_differentiable("Unique")
passes_indexed_slices("Identity", "PlaceholderWithDefault")


# ---- IndexedSlices -> dense ------------------------------------------------------------------
def indexed_slices_to_tensor(value: IndexedSlices, dtype: Any = None) -> Tensor:
    """TF's conversion: sum the rows into a dense tensor of ``dense_shape``."""
    if value.dense_shape is None:
        raise ValueError(errors.with_hint(
            f"Tensor conversion requested for IndexedSlices for argument `value` without "
            f"dense_shape: {value}", tr("give the IndexedSlices a dense_shape, or use its "
                                        ".values and .indices directly.")))
    ds = value.dense_shape
    g = ds.graph
    with g.as_default():
        known = const_value(ds)
        rows = int(known[0]) if known is not None else \
            array_ops.reshape(array_ops.slice_(ds, [0], [1]), [])
        return unsorted_segment_sum(value.values, value.indices, rows)


register_tensor_conversion(IndexedSlices, indexed_slices_to_tensor)
