"""``tf.sequence_mask``: the mask of the first ``lengths[i]`` positions of each row, as TF
composes it (Max, Maximum, Range, ExpandDims, Cast, Less under ``SequenceMask/``); no op
type of its own. No state.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of


def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = dtypes.bool_,
                  name: str | None = None) -> Tensor:
    """``mask[i, ..., j] = j < lengths[i, ...]`` for ``j`` below ``maxlen`` (the largest
    length when None)."""
    g = graph_of([lengths, maxlen])
    with g.as_default(), g.name_scope(name or "SequenceMask"):
        lengths = convert_to_tensor(lengths)
        derived = maxlen is None
        if derived:
            maxlen = math_ops.reduce_max(lengths)
            maxlen = math_ops.maximum(array_ops.constant(0, maxlen.dtype), maxlen)
        else:
            maxlen = convert_to_tensor(maxlen)
        row = array_ops.range_(array_ops.constant(0, maxlen.dtype), maxlen,
                               array_ops.constant(1, maxlen.dtype), name="Range")
        column = array_ops.expand_dims(lengths, -1)
        matrix = g.create_op("Cast", [column], {"SrcT": column.dtype, "DstT": maxlen.dtype},
                             name="Cast").outputs[0]     # TF casts even to the same dtype
        result = row < matrix
        known = const_value(lengths) if derived else None
        if known is not None and result.shape.ndims is not None:
            # TF's shape inference evaluates the constant Max; tfteach's reads the Const
            result.set_shape(list(result.shape.dims[:-1]) + [max(0, int(known.max(initial=0)))])
        dt = dtypes.as_dtype(dtype)
        return result if dt is dtypes.bool_ else array_ops.cast(result, dt)
