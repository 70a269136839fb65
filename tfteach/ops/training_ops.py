"""TF's dense training ops: ``ApplyGradientDescent``, ``ApplyMomentum``, ``ApplyAdagrad``,
``ApplyAdam``, ``ApplyRMSProp``, ``ApplyCenteredRMSProp``, which the optimizers build.

Inputs in TF's order: the variable and its slots (refs), then hyperparameters and the
gradient. As TF's kernels, they update the variable and its slots in place, element by
element (``xp.subtract(w, step, out=w)``), so two steps updating one variable at once may
race on single elements but never lose a whole update; each new slot value is a decay and
an addition written into the slot (a slot such as Adam's ``v`` never leaves its range), and
each slot is read once for the variable's step. ``use_locking=True`` holds the variable's
lock for the whole update, so concurrent updates are serialised.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.state_ops import _locked, _ref_of


def _decay_into(xp: Any, slot: Any, decay: Any, addend: Any) -> None:
    """``slot = slot * decay + addend`` in place (TF's ``slot += (x - slot) * (1 - decay)``)."""
    xp.multiply(slot, decay, out=slot)
    xp.add(slot, addend, out=slot)


def _apply_gradient_descent(ctx, var, alpha, delta):
    step = delta * alpha
    with _locked(ctx, var):
        w = var.buffer(ctx.op)
        ctx.xp.subtract(w, step, out=w)
    return var


def _apply_momentum(ctx, var, accum, lr, grad, momentum):
    op, xp = ctx.op, ctx.xp
    with _locked(ctx, var):
        w, a = var.buffer(op), accum.buffer(op)
        _decay_into(xp, a, momentum, grad)
        step = grad * lr + a * momentum * lr if ctx.attrs["use_nesterov"] else a * lr
        xp.subtract(w, step, out=w)
    return var


def _apply_adagrad(ctx, var, accum, lr, grad):
    op, xp = ctx.op, ctx.xp
    with _locked(ctx, var):
        w, a = var.buffer(op), accum.buffer(op)
        xp.add(a, grad * grad, out=a)
        xp.subtract(w, lr * grad / xp.sqrt(a), out=w)
    return var


def _apply_adam(ctx, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    op, xp = ctx.op, ctx.xp
    lr_t = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    with _locked(ctx, var):
        w, m_s, v_s = var.buffer(op), m.buffer(op), v.buffer(op)
        _decay_into(xp, m_s, beta1, grad * (1 - beta1))
        _decay_into(xp, v_s, beta2, grad * grad * (1 - beta2))
        direction = grad * (1 - beta1) + beta1 * m_s if ctx.attrs["use_nesterov"] else m_s
        xp.subtract(w, lr_t * direction / (xp.sqrt(v_s) + epsilon), out=w)
    return var


def _apply_rms_prop(ctx, var, ms, mom, lr, rho, momentum, epsilon, grad):
    op, xp = ctx.op, ctx.xp
    with _locked(ctx, var):
        w, ms_s, mom_s = var.buffer(op), ms.buffer(op), mom.buffer(op)
        _decay_into(xp, ms_s, rho, grad * grad * (1 - rho))
        _decay_into(xp, mom_s, momentum, lr * grad / xp.sqrt(ms_s + epsilon))
        xp.subtract(w, mom_s, out=w)
    return var


def _apply_centered_rms_prop(ctx, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    op, xp = ctx.op, ctx.xp
    with _locked(ctx, var):
        w, mg_s, ms_s, mom_s = var.buffer(op), mg.buffer(op), ms.buffer(op), mom.buffer(op)
        _decay_into(xp, mg_s, rho, grad * (1 - rho))
        _decay_into(xp, ms_s, rho, grad * grad * (1 - rho))
        denom = ms_s - xp.square(mg_s) + epsilon
        _decay_into(xp, mom_s, momentum, lr * grad / xp.sqrt(denom))
        xp.subtract(w, mom_s, out=w)
    return var


def _apply_shape(op):
    var, grad = op.inputs[0], op.inputs[op.op_def.extra["grad_index"]]
    if not var.shape.is_compatible_with(grad.shape):
        raise ValueError(f"Shapes must be equal rank, but are {var.shape.ndims} and "
                         f"{grad.shape.ndims}" if var.shape.ndims != grad.shape.ndims else
                         f"var and grad do not have the same shape{var.shape.bracket()} "
                         f"{grad.shape.bracket()} for '{op.name}' (op: '{op.type}').")
    return [(var.dtype, var.shape)]


# type -> (kernel, number of ref inputs, index of the gradient input); inputs in TF's order:
# the refs first, then hyperparameters and the gradient.
_TRAINING_OPS = {
    "ApplyGradientDescent": (_apply_gradient_descent, 1, 2),
    "ApplyMomentum": (_apply_momentum, 2, 3),
    "ApplyAdagrad": (_apply_adagrad, 2, 3),
    "ApplyAdam": (_apply_adam, 3, 9),
    "ApplyRMSProp": (_apply_rms_prop, 3, 7),
    "ApplyCenteredRMSProp": (_apply_centered_rms_prop, 4, 8),
}
for _type, (_kernel, _n_refs, _grad_index) in _TRAINING_OPS.items():
    register_op(_type, _apply_shape, _kernel, gpu_types=frozenset(dtypes.FLOATS),
                stateful=True, ref_inputs=tuple(range(_n_refs)), ref_output=True, cheap=False,
                extra={"grad_index": _grad_index})


def apply_update(op_type: str, refs: list, values: list, name: str | None = None,
                 **attrs: Any) -> Tensor:
    """Create training op ``op_type`` (e.g. ``ApplyAdam``) on variables ``refs``.

    ``values`` are the op's other inputs in TF's order (hyperparameters and the gradient,
    e.g. ``[lr, grad, momentum]`` for ApplyMomentum); Python numbers become constants of
    the variable's dtype.
    """
    rs = [_ref_of(r) for r in refs]
    g = rs[0].graph
    with g.as_default():
        vals = [convert_to_tensor(v, dtype=rs[0].dtype) for v in values]
    attrs.setdefault("use_locking", False)
    return g.create_op(op_type, rs + vals, {"T": rs[0].dtype, **attrs},
                       name=name or op_type).outputs[0]
