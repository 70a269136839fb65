"""Exponential linear units: ``Elu`` / ``EluGrad`` and ``Selu`` / ``SeluGrad`` (``tf.nn.elu``,
``tf.nn.selu``), with TF's fused gradient ops.

``elu(x) = x`` for ``x > 0``, else ``exp(x) - 1``; ``selu(x) = scale * elu_alpha(x)`` with
TF's constants. Each gradient op takes ``(gradients, outputs)`` as TF's do, so the backward
pass reads the forward output, not the input.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.ops.common import convert_to_tensor, same_shape_fn

__all__ = ["elu", "selu"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _elu_kernel(ctx, x):
    xp = ctx.xp
    return xp.where(x > 0, x, xp.expm1(xp.minimum(x, 0))).astype(x.dtype, copy=False)


def _selu_kernel(ctx, x):
    xp = ctx.xp
    negative = _SELU_ALPHA * xp.expm1(xp.minimum(x, 0))
    return (_SELU_SCALE * xp.where(x > 0, x, negative)).astype(x.dtype, copy=False)


def _elu_grad_kernel(ctx, g, y):
    return ctx.xp.where(y > 0, g, g * (y + 1)).astype(g.dtype, copy=False)


def _selu_grad_kernel(ctx, g, y):
    xp = ctx.xp
    return xp.where(y > 0, g * _SELU_SCALE, g * (y + _SELU_SCALE * _SELU_ALPHA)).astype(
        g.dtype, copy=False)


def _fused_grad(op_type: str):
    def grad(op, g):
        y = op.outputs[0]
        return [y.graph.create_op(op_type, [g, y], {"T": y.dtype}, name=op_type).outputs[0]]
    return grad


for _type, _kernel, _grad_kernel in (("Elu", _elu_kernel, _elu_grad_kernel),
                                     ("Selu", _selu_kernel, _selu_grad_kernel)):
    register_op(_type, same_shape_fn, _kernel)
    register_op(_type + "Grad", same_shape_fn, _grad_kernel)
    set_gradient(_type, _fused_grad(_type + "Grad"))


def _activation(op_type: str, features: Any, name: str | None) -> Tensor:
    t = convert_to_tensor(features, name="features")
    if not t.dtype.is_floating:
        raise TypeError(f"Value passed to parameter 'features' has DataType {t.dtype.name} "
                        f"not in list of allowed values: float16, bfloat16, float32, float64")
    return t.graph.create_op(op_type, [t], {"T": t.dtype}, name=name or op_type).outputs[0]


def elu(features: Any, name: str | None = None) -> Tensor:
    """``features`` where positive, ``exp(features) - 1`` elsewhere."""
    return _activation("Elu", features, name)


def selu(features: Any, name: str | None = None) -> Tensor:
    """``scale * elu`` with TF's alpha and scale (self-normalising networks)."""
    return _activation("Selu", features, name)
