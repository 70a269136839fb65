"""Statistics that training scripts put in summaries, composed of existing ops (no op type
of their own): ``tf.nn.zero_fraction``, the share of zeros in a tensor (how many ReLUs are
dead, in the CIFAR-10 tutorial's ``_activation_summary``).

TF 1.x counts in int64 under a ``tf.cond`` that picks an int32 or int64 count by size;
tfteach counts in int64 directly, so the graph has no Switch/Merge but the same scopes
(``zero_fraction/count_nonzero``, ``zero_fraction/counts_to_fraction``) and value.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of ``value``'s elements that are zero, a float32 scalar."""
    t = convert_to_tensor(value)
    g = t.graph
    with g.name_scope(name or "zero_fraction"):
        size = array_ops.cast(array_ops.size(t), dtypes.int64)
        with g.name_scope("count_nonzero"):
            zero = convert_to_tensor(0, dtype=t.dtype, name="zeros")
            nonzero = array_ops.cast(math_ops.not_equal(t, zero), dtypes.int64)
            count = math_ops.reduce_sum(nonzero, name="nonzero_count")
        with g.name_scope("counts_to_fraction"):
            zeros = math_ops.subtract(size, count)
            fraction = math_ops.divide(array_ops.cast(zeros, dtypes.float32),
                                       array_ops.cast(size, dtypes.float32))
        return array_ops.identity(fraction, name="fraction")
