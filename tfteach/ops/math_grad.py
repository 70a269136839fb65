"""Gradients of the math ops (TF's ``math_grad``), TF's ``grad(op, grad)`` convention.

The elementwise gradients are tables like the op tables of ``math_ops``: ``_BINARY_GRADS``
and ``_UNARY_GRADS`` (a few through TF's fused ``*Grad`` kernels, registered here). A binary
op's gradient is computed in the broadcast output's shape, then ``sum_to`` sums it back to
each operand's shape (TF's BroadcastGradientArgs + Sum + Reshape, or static axes when the
shapes say enough). ``gradients_impl`` imports this module, so ``import tfteach`` registers
them.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tfteach.errors import with_hint
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import not_differentiable, register_op, set_gradient
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import axis_list, const_value, same_shape_fn
from tfteach.ops.cumulative_ops import cumprod
from tfteach.ops.math_ops import (_COMPARE, cos, divide, equal, greater,
                                  greater_equal, less_equal, log, matmul, maximum, multiply,
                                  negative, pow, reciprocal, reduce_prod, reduce_sum, select,
                                  sign, sin)


# ---- elementwise -----------------------------------------------------------------------------
def _maximum_grads(op, grad, keep_x_where):
    x, y = op.inputs
    mask = keep_x_where(x, y)
    zeros = array_ops.zeros_like(grad)
    return select(mask, grad, zeros), select(mask, zeros, grad)


def _pow_grads(op, grad):
    x, y = op.inputs
    z = op.outputs[0]
    gx = grad * y * pow(x, y - 1)
    positive = greater(x, array_ops.zeros_like(x))
    safe_x = select(positive, x, array_ops.ones_like(x))
    log_x = select(positive, log(safe_x), array_ops.zeros_like(x))
    return gx, grad * z * log_x


def _squared_difference_grads(op, grad):
    x, y = op.inputs
    gx = multiply(grad, 2 * (x - y))
    return gx, negative(gx)


# Gradients in the broadcast output's shape: type -> (op, grad) -> (grad_x, grad_y).
_BINARY_GRADS: dict[str, Callable] = {
    "Add": lambda op, g: (g, g),
    "AddV2": lambda op, g: (g, g),
    "Sub": lambda op, g: (g, negative(g)),
    "Mul": lambda op, g: (g * op.inputs[1], op.inputs[0] * g),
    "RealDiv": lambda op, g: (g / op.inputs[1],
                              g * (negative(op.inputs[0]) / op.inputs[1] / op.inputs[1])),
    "Maximum": lambda op, g: _maximum_grads(op, g, greater_equal),
    "Minimum": lambda op, g: _maximum_grads(op, g, less_equal),
    "Pow": _pow_grads,
    "SquaredDifference": _squared_difference_grads,
}


def _binary_grad(fn: Callable) -> Callable:
    def grad(op, g):
        x, y = op.inputs
        gx, gy = fn(op, g)
        return [sum_to(gx, x, y), sum_to(gy, y, x)]
    return grad


def _grad_op(op_type: str, y: Tensor, g: Tensor) -> Tensor:
    """TF's fused ``*Grad`` ops take (forward output, incoming gradient)."""
    return y.graph.create_op(op_type, [y, g], {"T": y.dtype}, name=op_type).outputs[0]


_UNARY_GRADS: dict[str, Callable] = {
    "Neg": lambda op, g: negative(g),
    "Log": lambda op, g: g * reciprocal(op.inputs[0]),
    "Exp": lambda op, g: g * op.outputs[0],
    "Sqrt": lambda op, g: _grad_op("SqrtGrad", op.outputs[0], g),
    "Rsqrt": lambda op, g: _grad_op("RsqrtGrad", op.outputs[0], g),
    "Square": lambda op, g: multiply(g, 2 * op.inputs[0]),
    "Abs": lambda op, g: g * sign(op.inputs[0]),
    "Sign": lambda op, g: array_ops.zeros_like(op.inputs[0]),
    "Reciprocal": lambda op, g: _grad_op("ReciprocalGrad", op.outputs[0], g),
    "Log1p": lambda op, g: g * reciprocal(1 + op.inputs[0]),
    "Cos": lambda op, g: negative(g) * sin(op.inputs[0]),
    "Sin": lambda op, g: g * cos(op.inputs[0]),
}
# The fused gradient kernels: (y, dy) -> dx.
_FUSED_GRADS: dict[str, Callable] = {
    "SqrtGrad": lambda ctx, y, dy: dy * 0.5 / y,
    "RsqrtGrad": lambda ctx, y, dy: dy * -0.5 * y * y * y,
    "ReciprocalGrad": lambda ctx, y, dy: -dy * y * y,
}

for _t, _g in _BINARY_GRADS.items():
    set_gradient(_t, _binary_grad(_g))
for _t, _g in _UNARY_GRADS.items():
    set_gradient(_t, lambda op, g, _g=_g: [_g(op, g)])
for _t, _k in _FUSED_GRADS.items():
    register_op(_t, same_shape_fn, _k)
not_differentiable("Floor", "LogicalNot", *_COMPARE)


# ---- broadcasting: a gradient summed back to an operand's shape ------------------------------
def _static_sum_axes(x: Tensor, other: Tensor, out_rank: int) -> tuple | None:
    """(leading axes, size-1 axes) that broadcasting added to ``x``, or None if unknowable."""
    xd, od = x.shape.dims, other.shape.dims
    if xd is None or od is None:
        return None
    lead = list(range(out_rank - len(xd)))
    ones = []
    for i, d in enumerate(xd):
        ax = out_rank - len(xd) + i
        j = ax - (out_rank - len(od))
        o = od[j] if j >= 0 else 1
        if d == 1 and o != 1:
            ones.append(ax)
        elif d is None and o != 1:
            return None
    return lead, ones


def sum_to(grad: Tensor, x: Tensor, other: Tensor) -> Tensor:
    """Sum ``grad`` (shaped like ``x`` broadcast against ``other``) back to ``x``'s shape."""
    if grad is None:
        return None
    out_rank = grad.shape.ndims
    axes = _static_sum_axes(x, other, out_rank) if out_rank is not None else None
    if axes is None:
        rx, _ = array_ops.broadcast_gradient_args(array_ops.shape(x), array_ops.shape(other))
        return array_ops.reshape(reduce_sum(grad, rx), array_ops.shape(x))
    lead, ones = axes
    if ones:
        grad = reduce_sum(grad, ones, keepdims=True)
    if lead:
        grad = reduce_sum(grad, lead)
    return grad


# ---- MatMul, AddN ----------------------------------------------------------------------------
def _matmul_grad(op, grad):
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    if not ta and not tb:
        return [matmul(grad, b, transpose_b=True), matmul(a, grad, transpose_a=True)]
    if not ta and tb:
        return [matmul(grad, b), matmul(grad, a, transpose_a=True)]
    if ta and not tb:
        return [matmul(b, grad, transpose_b=True), matmul(a, grad)]
    return [matmul(b, grad, transpose_a=True, transpose_b=True),
            matmul(grad, a, transpose_a=True, transpose_b=True)]


set_gradient("MatMul", _matmul_grad)


set_gradient("AddN", lambda op, grad: [grad] * len(op.inputs))


# ---- reductions ------------------------------------------------------------------------------
def _keep_reduced_dims(t: Tensor, op) -> Tensor:
    """``t`` (shaped like reduction ``op``'s output) with the reduced axes back as size 1,
    or left as is when broadcasting against the input already lines it up."""
    x, a = op.inputs
    axes, rank = const_value(a), x.shape.ndims
    if op.attrs["keep_dims"]:
        return t
    if axes is None or rank is None:
        return array_ops.reshape(t, array_ops.shape(reduce_sum(x, a, keepdims=True)))
    axes = axis_list(axes, rank)
    if axes == list(range(len(axes))):
        return t
    dims = [1 if i in axes else d for i, d in enumerate(x.shape.dims)]
    if None not in dims:
        return array_ops.reshape(t, dims)
    for ax in axes:
        t = array_ops.expand_dims(t, ax)
    return t


def _broadcast_back(grad: Tensor, op) -> Tensor:
    x = op.inputs[0]
    g = _keep_reduced_dims(grad, op)
    if g.shape.is_fully_defined() and g.shape == x.shape:
        return g
    return array_ops.broadcast_to(g, array_ops.shape_of(x))


def _mean_grad(op, grad):
    """The Sum gradient divided by the number of entries averaged (known statically when
    the shapes say so; the loss of a batch of unknown size needs only ``Size(x)``)."""
    x, y = op.inputs[0], op.outputs[0]
    nx, ny = x.shape.num_elements(), y.shape.num_elements()
    if nx is not None and ny is not None:
        factor: Any = np.array(nx // max(ny, 1), dtype=grad.dtype.np)
    elif ny is not None:
        factor = array_ops.cast(array_ops.size(x), grad.dtype)
        factor = factor if ny == 1 else factor / float(ny)
    else:
        factor = (array_ops.cast(array_ops.size(x), grad.dtype) /
                  array_ops.cast(maximum(array_ops.size(y), 1), grad.dtype))
    return [_broadcast_back(divide(grad, factor), op), None]


def _max_grad(op, grad):
    """The gradient goes to the maximal entries, shared equally between ties (as TF)."""
    x, a = op.inputs
    y = _keep_reduced_dims(op.outputs[0], op)
    indicators = array_ops.cast(equal(x, y), grad.dtype)
    selected = reduce_sum(indicators, a, keepdims=True)
    return [divide(indicators, selected) * _keep_reduced_dims(grad, op), None]


def _prod_grad(op, grad):
    """Product of all other entries: exclusive cumprods from both sides (TF's method)."""
    x, a = op.inputs
    axes, rank = const_value(a), x.shape.ndims
    if axes is None or rank is None:
        raise LookupError(with_hint(
            f"The gradient of Prod '{op.name}' needs constant axes and a known rank.",
            tr("pass axis= as a Python int or list.")))
    reduced = axis_list(axes, rank)
    perm = reduced + [i for i in range(rank) if i not in reduced]
    g = _broadcast_back(grad, op)
    permuted = array_ops.transpose(x, perm)
    permuted_shape = array_ops.shape(permuted)
    reduced_num = reduce_prod(array_ops.slice_(permuted_shape, [0], [len(reduced)]))
    flat = array_ops.reshape(permuted, array_ops.stack([reduced_num, -1]))
    left = cumprod(flat, 0, exclusive=True)
    right = cumprod(flat, 0, exclusive=True, reverse=True)
    others = array_ops.reshape(left * right, permuted_shape)
    return [g * array_ops.transpose(others, np.argsort(perm).astype(np.int32)), None]


set_gradient("Sum", lambda op, grad: [_broadcast_back(grad, op), None])
set_gradient("Mean", _mean_grad)
set_gradient("Max", _max_grad)
set_gradient("Min", _max_grad)
set_gradient("Prod", _prod_grad)


# ---- Select, ArgMax, ArgMin ------------------------------------------------------------------
def _select_grad(op, grad):
    c = op.inputs[0]
    zeros = array_ops.zeros_like(grad)
    return [None, select(c, grad, zeros), select(c, zeros, grad)]


set_gradient("Select", _select_grad)


not_differentiable("ArgMax", "ArgMin")
