"""ListDiff (``tf.setdiff1d``): the values of a vector ``x`` that are not in ``y``, in
``x``'s order, and their positions in ``x``. Not differentiable, as in TF. No state.
"""
from __future__ import annotations

from typing import Any

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.registry import register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, graph_of, shape_error

__all__ = ["setdiff1d"]


def _list_diff_shape(op: Any) -> list:
    for t in op.inputs:
        if t.shape.ndims not in (None, 1):
            raise shape_error(op, f"Shape must be rank 1 but is rank {t.shape.ndims}")
    return [(op.inputs[0].dtype, TensorShape([None])), (op.attrs["out_idx"], TensorShape([None]))]


def _list_diff_kernel(ctx: Any, x: Any, y: Any) -> tuple:
    xp = ctx.xp
    if x.ndim != 1 or y.ndim != 1:
        raise errors.InvalidArgumentError(
            f"x should be a 1D vector.  Got shape {list(x.shape)}" if x.ndim != 1 else
            f"y should be a 1D vector.  Got shape {list(y.shape)}", op=ctx.op,
            hint=tr("tf.setdiff1d compares two vectors; reshape them with tf.reshape(t, [-1])."))
    keep = ~xp.isin(x, y)
    idx = xp.nonzero(keep)[0].astype(ctx.attrs["out_idx"].np)
    return x[keep], idx


register_op("ListDiff", _list_diff_shape, _list_diff_kernel)


def setdiff1d(x: Any, y: Any, index_dtype: Any = dtypes.int32, name: str | None = None) -> tuple:
    """``(out, idx)``: the values of ``x`` not in ``y`` (``x``'s order) and where they are."""
    g = graph_of([x, y])
    with g.as_default():
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype, name="y")
        op = g.create_op("ListDiff", [x, y], {"T": x.dtype, "out_idx": dtypes.as_dtype(
            index_dtype)}, name=name or "ListDiff")
        return op.outputs[0], op.outputs[1]
