"""Float classification: IsNan, IsInf and IsFinite (``tf.is_nan``, ``tf.is_inf``,
``tf.is_finite``), elementwise bool results of a float tensor's shape, with no gradient as
in TF. No state.
"""
from __future__ import annotations

from typing import Any, Callable

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.ops.common import convert_to_tensor

_KERNELS: dict[str, Callable] = {
    "IsNan": lambda ctx, x: ctx.xp.isnan(x),
    "IsInf": lambda ctx, x: ctx.xp.isinf(x),
    "IsFinite": lambda ctx, x: ctx.xp.isfinite(x),
}


def _bool_shape(op):
    return [(dtypes.bool_, op.inputs[0].shape)]


for _t, _k in _KERNELS.items():
    register_op(_t, _bool_shape, _k)
not_differentiable(*_KERNELS)


def _classify(op_type: str, x: Any, name: str | None) -> Tensor:
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise TypeError(f"Value passed to parameter 'x' has DataType {t.dtype.name} not in "
                        "list of allowed values: bfloat16, float16, float32, float64")
    return t.graph.create_op(op_type, [t], {"T": t.dtype}, name=name or op_type).outputs[0]


def is_nan(x: Any, name: str | None = None) -> Tensor:
    """Where ``x`` is NaN."""
    return _classify("IsNan", x, name)


def is_inf(x: Any, name: str | None = None) -> Tensor:
    """Where ``x`` is +inf or -inf."""
    return _classify("IsInf", x, name)


def is_finite(x: Any, name: str | None = None) -> Tensor:
    """Where ``x`` is neither NaN nor infinite."""
    return _classify("IsFinite", x, name)
