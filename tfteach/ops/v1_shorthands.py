"""TF 1.x shorthands that TF 2 dropped: ``tf.to_int32``, ``tf.to_int64``, ``tf.to_double``
(a Cast named as TF names it) and ``tf.tables_initializer`` (a NoOp named
``init_all_tables``: tfteach has no lookup tables, so there is nothing to initialise)."""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.ops.array_ops import cast


def to_int32(x: Any, name: str = "ToInt32") -> Tensor:
    """``x`` cast to int32 (floats are truncated toward zero, as TF)."""
    return cast(x, dtypes.int32, name=name)


def to_int64(x: Any, name: str = "ToInt64") -> Tensor:
    """``x`` cast to int64."""
    return cast(x, dtypes.int64, name=name)


def to_double(x: Any, name: str = "ToDouble") -> Tensor:
    """``x`` cast to float64."""
    return cast(x, dtypes.float64, name=name)


def tables_initializer(name: str = "init_all_tables") -> Operation:
    """The op that initialises every lookup table: a NoOp, as TF's with no tables."""
    from tfteach.ops.control_ops import no_op
    return no_op(name=name)
