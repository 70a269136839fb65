"""``DivNoNan``: ``x / y``, and 0 where ``y`` is 0 (TF's ``tf.math.divide_no_nan``).

The losses and metrics divide by counts that may be zero (no weight, no example yet); TF
builds this op there (``mean_squared_error/value``, ``accuracy/update_op``), so tfteach does too.
Gradient as TF's: ``div_no_nan(g, y)`` and ``g * div_no_nan(div_no_nan(-x, y), y)``, summed
back over broadcast axes.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.ops.common import binary_inputs, broadcast_shape_fn, graph_of
from tfteach.ops.math_grad import sum_to
from tfteach.ops.math_ops import negative

__all__ = ["div_no_nan"]


def _div_no_nan_kernel(ctx, x, y):
    xp = ctx.xp
    safe = xp.where(y == 0, xp.ones_like(y), y)
    return xp.where(y == 0, xp.zeros_like(x / safe), x / safe)


def _div_no_nan_grad(op, grad):
    x, y = op.inputs
    gx = div_no_nan(grad, y)
    gy = grad * div_no_nan(div_no_nan(negative(x), y), y)
    return [sum_to(gx, x, y), sum_to(gy, y, x)]


register_op("DivNoNan", broadcast_shape_fn, _div_no_nan_kernel)
set_gradient("DivNoNan", _div_no_nan_grad)


def div_no_nan(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x / y`` element-wise, with 0 wherever ``y == 0`` (even for ``x`` inf or NaN)."""
    g = graph_of([x, y])
    with g.as_default(), g.name_scope(name or "div_no_nan") as scope:
        tx, ty = binary_inputs("DivNoNan", x, y)
        return g.create_op("DivNoNan", [tx, ty], {"T": tx.dtype}, name=scope).outputs[0]
