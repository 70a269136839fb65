"""Neural-network ops: activations, softmax, bias_add, l2_loss, dropout, cross-entropies.

Each op is registered with its shape function, kernel (against ``xp``) and gradient side by
side; the fused gradient kernels TF uses (``ReluGrad``, ``SigmoidGrad``, ``TanhGrad``,
``SoftplusGrad``, ``BiasAddGrad``) are ops too, with no gradient of their own (tfteach has
no second derivatives of them).

Numerical stability: softmax, log-softmax and both cross-entropies subtract the row maximum
before exponentiating (log-sum-exp), and sigmoid is computed as ``(tanh(x/2) + 1) / 2``, so
logits of 1e4 give finite values and gradients, never NaN. The cross-entropy ops return
the loss and the backprop (``softmax - labels``) together, as TF's kernels do.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfteach.errors import InvalidArgumentError, with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops, random_ops
from tfteach.ops.common import (
    binary_inputs,
    const_value,
    convert_to_tensor,
    same_shape_fn,
    shape_error,
)


def _unary(op_type: str, x: Any, name: str | None) -> Tensor:
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        message = (f"Value passed to parameter 'features' of '{op_type}' has DataType "
                   f"{t.dtype.name} not in list of allowed values: float16, float32, float64")
        raise TypeError(with_hint(message, tr("cast it first: tf.cast(x, tf.float32).")))
    return t.graph.create_op(op_type, [t], {"T": t.dtype}, name=name or op_type).outputs[0]


def _fused(op_type: str, a: Tensor, b: Tensor) -> Tensor:
    return a.graph.create_op(op_type, [a, b], {"T": a.dtype}, name=op_type).outputs[0]


# ---- activations: kernel, fused gradient kernel and gradient, per op --------------------------
def _sigmoid(xp, x):
    return (xp.tanh(x * 0.5) + 1) * 0.5


_ACTIVATIONS: dict[str, tuple[Callable, str, Callable, Callable]] = {
    # type: (kernel, gradient op type, gradient kernel, gradient (op, grad) -> input grad)
    "Relu": (lambda ctx, x: ctx.xp.maximum(x, 0).astype(x.dtype, copy=False), "ReluGrad",
             lambda ctx, g, y: g * (y > 0), lambda op, g: _fused("ReluGrad", g, op.outputs[0])),
    "Relu6": (lambda ctx, x: ctx.xp.clip(x, 0, 6).astype(x.dtype, copy=False), "Relu6Grad",
              lambda ctx, g, x: g * ((x > 0) & (x < 6)),
              lambda op, g: _fused("Relu6Grad", g, op.inputs[0])),
    "Sigmoid": (lambda ctx, x: _sigmoid(ctx.xp, x), "SigmoidGrad",
                lambda ctx, y, g: g * y * (1 - y),
                lambda op, g: _fused("SigmoidGrad", op.outputs[0], g)),
    "Tanh": (lambda ctx, x: ctx.xp.tanh(x), "TanhGrad", lambda ctx, y, g: g * (1 - y * y),
             lambda op, g: _fused("TanhGrad", op.outputs[0], g)),
    "Softplus": (lambda ctx, x: ctx.xp.logaddexp(0, x).astype(x.dtype, copy=False),
                 "SoftplusGrad", lambda ctx, g, x: g * _sigmoid(ctx.xp, x),
                 lambda op, g: _fused("SoftplusGrad", g, op.inputs[0])),
}

for _type, (_kernel, _grad_type, _grad_kernel, _grad) in _ACTIVATIONS.items():
    register_op(_type, same_shape_fn, _kernel)
    register_op(_grad_type, same_shape_fn, _grad_kernel)
    set_gradient(_type, lambda op, g, _grad=_grad: [_grad(op, g)])


def relu(features: Any, name: str | None = None) -> Tensor:
    return _unary("Relu", features, name)


def relu6(features: Any, name: str | None = None) -> Tensor:
    return _unary("Relu6", features, name)


def sigmoid(x: Any, name: str | None = None) -> Tensor:
    return _unary("Sigmoid", x, name)


def tanh(x: Any, name: str | None = None) -> Tensor:
    return _unary("Tanh", x, name)


def softplus(features: Any, name: str | None = None) -> Tensor:
    return _unary("Softplus", features, name)


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """``max(alpha * x, x)`` (composed of Mul and Maximum, as TF 1.x does)."""
    t = convert_to_tensor(features)
    with t.graph.name_scope(name or "LeakyRelu") as scope:
        return math_ops.maximum(math_ops.multiply(alpha, t), t, name=scope)


# ---- softmax and log-softmax (last axis) -----------------------------------------------------
_TINY_SUM = 1e-30   # a row's sum of exps below this: shift that row by its own max


def _shifted_exp(xp, x):
    """``(shifted, exp(shifted), row sums)`` for a stable softmax along the last axis.

    Any per-row shift gives the same softmax; NumPy reduces a short last axis slowly, so
    on the CPU the whole tensor's max is tried first (no exp can overflow). Only if some
    row's sum then underflows (a row far below the max) or is NaN does every row get its
    own max, as on GPUs."""
    if xp is np and x.size and x.dtype.itemsize >= 4:     # float16's exps underflow at once
        shifted = x - x.max()
        e = np.exp(shifted)
        total = e.sum(axis=-1, keepdims=True)
        if float(total.min()) >= _TINY_SUM:     # a Python float: not rounded to x's dtype
            return shifted, e, total
    shifted = x - x.max(axis=-1, keepdims=True)
    e = xp.exp(shifted)
    return shifted, e, e.sum(axis=-1, keepdims=True)


def _log_softmax_rows(xp, x):
    shifted, _, total = _shifted_exp(xp, x)
    return shifted - xp.log(total)


def _softmax_kernel(ctx, x):
    _, e, total = _shifted_exp(ctx.xp, x)
    e /= total
    return e


def _logits_shape(op):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.ndims < 1:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    return [(x.dtype, x.shape)]


def _softmax_grad(op, grad):
    """(grad - sum(grad * softmax)) * softmax, along the last axis."""
    y = op.outputs[0]
    dot = math_ops.reduce_sum(grad * y, -1, keepdims=True)
    return [(grad - dot) * y]


def _log_softmax_grad(op, grad):
    softmax = math_ops.exp(op.outputs[0])
    return [grad - math_ops.reduce_sum(grad, -1, keepdims=True) * softmax]


register_op("Softmax", _logits_shape, _softmax_kernel)
set_gradient("Softmax", _softmax_grad)
register_op("LogSoftmax", _logits_shape, lambda ctx, x: _log_softmax_rows(ctx.xp, x))
set_gradient("LogSoftmax", _log_softmax_grad)


def _on_last_axis(op_type: str, logits: Any, axis: int | None, name: str | None) -> Tensor:
    """Apply a last-axis op along ``axis`` by swapping that axis to the end and back."""
    t = convert_to_tensor(logits)
    rank = t.shape.ndims
    if axis is None or axis == -1 or (rank is not None and axis == rank - 1):
        return _unary(op_type, t, name)
    if rank is None:
        raise ValueError(f"{op_type} along axis {axis} needs a tensor of known rank.")
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    swapped = _unary(op_type, array_ops.transpose(t, perm), None)
    return array_ops.transpose(swapped, perm, name=name or "transpose")


def softmax(logits: Any, axis: int | None = None, name: str | None = None,
            dim: int | None = None) -> Tensor:
    """exp(logits) / sum(exp(logits)) along ``axis`` (default: the last)."""
    return _on_last_axis("Softmax", logits, dim if axis is None else axis, name)


def log_softmax(logits: Any, axis: int | None = None, name: str | None = None,
                dim: int | None = None) -> Tensor:
    """logits - log(sum(exp(logits))) along ``axis`` (default: the last)."""
    return _on_last_axis("LogSoftmax", logits, dim if axis is None else axis, name)


# ---- bias_add ----------------------------------------------------------------------------------
def _channel_axis(op) -> int:
    return 1 if op.attrs.get("data_format", "NHWC") == "NCHW" else -1


def _bias_add_shape(op):
    value, bias = op.inputs
    if bias.shape.ndims not in (None, 1):
        raise shape_error(op, f"Shape must be rank 1 but is rank {bias.shape.ndims}")
    if value.shape.ndims is not None and value.shape.ndims < 2:
        raise shape_error(op, f"Shape must be at least rank 2 but is rank {value.shape.ndims}")
    if value.shape.dims is not None and bias.shape.dims is not None:
        c, b = value.shape.dims[_channel_axis(op)], bias.shape.dims[0]
        if c is not None and b is not None and c != b:
            raise shape_error(op, f"Dimensions must be equal, but are {c} and {b}")
    return [(value.dtype, value.shape)]


def _bias_add_kernel(ctx, value, bias):
    if _channel_axis(ctx.op) == 1:
        return value + bias.reshape((-1,) + (1,) * (value.ndim - 2))
    return value + bias


def _bias_add_grad_kernel(ctx, grad):
    axis = _channel_axis(ctx.op) % grad.ndim
    return grad.sum(axis=tuple(i for i in range(grad.ndim) if i != axis))


def _bias_add_grad_shape(op):
    g = op.inputs[0]
    dim = None if g.shape.dims is None else g.shape.dims[_channel_axis(op)]
    return [(g.dtype, TensorShape([dim]))]


def _bias_add_grad(op, grad):
    fmt = op.attrs.get("data_format", "NHWC")
    bias_grad = grad.graph.create_op("BiasAddGrad", [grad], {"T": grad.dtype,
                                     "data_format": fmt}, name="BiasAddGrad").outputs[0]
    return [grad, bias_grad]


register_op("BiasAdd", _bias_add_shape, _bias_add_kernel)
register_op("BiasAddGrad", _bias_add_grad_shape, _bias_add_grad_kernel)
set_gradient("BiasAdd", _bias_add_grad)


def bias_add(value: Any, bias: Any, data_format: str | None = None,
             name: str | None = None) -> Tensor:
    """``value + bias`` along the channel axis (the last, or axis 1 for ``NCHW``)."""
    v, b = binary_inputs("BiasAdd", value, bias, names=("value", "bias"))
    return v.graph.create_op("BiasAdd", [v, b], {"T": v.dtype,
                             "data_format": data_format or "NHWC"},
                             name=name or "BiasAdd").outputs[0]


def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """``matmul(x, weights) + biases`` (MatMul then BiasAdd under ``xw_plus_b/``)."""
    t = convert_to_tensor(x)
    with t.graph.name_scope(name or "xw_plus_b") as scope:
        mm = math_ops.matmul(t, weights, name="MatMul")
        return bias_add(mm, biases, name=scope)


# ---- l2_loss -----------------------------------------------------------------------------------
register_op("L2Loss", lambda op: [(op.inputs[0].dtype, TensorShape([]))],
            lambda ctx, x: (ctx.xp.sum(x * x) / 2).astype(x.dtype))
set_gradient("L2Loss", lambda op, grad: [op.inputs[0] * grad])


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """sum(t ** 2) / 2, a scalar (weight decay's usual term)."""
    return _unary("L2Loss", t, name)


# ---- cross-entropies ---------------------------------------------------------------------------
def _xent_shape(op):
    logits, labels = op.inputs
    if logits.shape.ndims not in (None, 2):
        raise shape_error(op, f"logits must be 2-dimensional, but is rank {logits.shape.ndims}")
    if not logits.shape.is_compatible_with(labels.shape):
        raise shape_error(op, "logits and labels must be broadcastable: logits_size="
                              f"{logits.shape.bracket()} labels_size={labels.shape.bracket()}")
    merged = logits.shape.merge_with(labels.shape)
    batch = None if merged.dims is None else merged.dims[0]
    return [(logits.dtype, TensorShape([batch])), (logits.dtype, merged)]


def _xent_kernel(ctx, logits, labels):
    log_probs = _log_softmax_rows(ctx.xp, logits)
    loss = (labels * -log_probs).sum(axis=-1)
    return loss, ctx.xp.exp(log_probs) - labels


def _xent_grad(op, grad_loss, grad_backprop):
    """d loss/d logits = softmax - labels; d loss/d labels = -log_softmax(logits)."""
    logits = op.inputs[0]
    g = array_ops.expand_dims(grad_loss, -1)
    return [g * op.outputs[1], g * math_ops.negative(log_softmax(logits))]


def _sparse_xent_shape(op):
    logits, labels = op.inputs
    if logits.shape.ndims not in (None, 2):
        raise shape_error(op, f"logits must be 2-D, but got shape {logits.shape.bracket()}")
    if labels.shape.ndims not in (None, 1):
        raise shape_error(op, f"labels must be 1-D, but got shape {labels.shape.bracket()}")
    batch = None if logits.shape.dims is None else logits.shape.dims[0]
    if batch is None and labels.shape.dims is not None:
        batch = labels.shape.dims[0]
    return [(logits.dtype, TensorShape([batch])), (logits.dtype, logits.shape)]


_UNSIGNED = {np.dtype(f"{o}i{n}"): np.dtype(f"{o}u{n}") for o in "<>=" for n in (1, 2, 4, 8)}


def _check_labels(ctx, labels, classes: int) -> None:
    host = np.asarray(ctx.device.to_host(labels))
    if not host.size:
        return
    unsigned = _UNSIGNED.get(host.dtype)
    if unsigned is not None:        # one pass: as unsigned, a negative label is huge
        if int(host.view(unsigned).max()) < classes:
            return
    elif host.min() >= 0 and host.max() < classes:
        return
    bad = (host < 0) | (host >= classes)
    if bad.any():
        raise InvalidArgumentError(
            f"Received a label value of {int(host[bad][0])} which is outside the valid range "
            f"of [0, {classes}).  Label values: {' '.join(str(int(v)) for v in host)}",
            op=ctx.op, hint=tr("labels must be class indices 0..{last}; check the data or the "
                               "number of output units of the last layer.", last=classes - 1))


def _sparse_xent_kernel(ctx, logits, labels):
    """One pass of exp: loss = log(sum(exp(shifted))) - shifted[label]."""
    xp = ctx.xp
    _check_labels(ctx, labels, logits.shape[-1])
    shifted, backprop, total = _shifted_exp(xp, logits)
    rows = xp.arange(logits.shape[0])
    loss = xp.log(total[:, 0])
    loss -= shifted[rows, labels]
    backprop /= total
    backprop[rows, labels] -= 1
    return loss, backprop


def _sparse_xent_grad(op, grad_loss, grad_backprop):
    return [array_ops.expand_dims(grad_loss, -1) * op.outputs[1], None]


register_op("SoftmaxCrossEntropyWithLogits", _xent_shape, _xent_kernel, cheap=False)
set_gradient("SoftmaxCrossEntropyWithLogits", _xent_grad)
register_op("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_shape, _sparse_xent_kernel,
            cheap=False)
set_gradient("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_grad)


def _xent_args(fn: str, sentinel: Any, labels: Any, logits: Any) -> None:
    if sentinel is not None:
        raise ValueError(f"Only call `{fn}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def softmax_cross_entropy_with_logits_v2(_sentinel: Any = None, labels: Any = None,
                                         logits: Any = None, dim: int = -1,
                                         name: str | None = None, axis: int | None = None
                                         ) -> Tensor:
    """Per-example cross-entropy between ``labels`` (distributions) and softmax(logits).

    Gradients flow into both logits and labels (TF's v2 behaviour).
    """
    _xent_args("softmax_cross_entropy_with_logits_v2", _sentinel, labels, logits)
    lg = convert_to_tensor(logits)
    with lg.graph.name_scope(name or "softmax_cross_entropy_with_logits") as scope:
        lb = convert_to_tensor(labels, dtype=lg.dtype)
        lg, lb, restore = _as_rows(lg, lb, dim if axis is None else axis)
        cost = lg.graph.create_op("SoftmaxCrossEntropyWithLogits", [lg, lb], {"T": lg.dtype},
                                  name=scope if restore is None else "Xent").outputs[0]
        return cost if restore is None else array_ops.reshape(cost, restore, name=scope)


def softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None,
                                      logits: Any = None, dim: int = -1,
                                      name: str | None = None) -> Tensor:
    """TF 1.x's original version: like ``_v2``, but no gradient flows into ``labels``."""
    _xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    lg = convert_to_tensor(logits)
    with lg.graph.name_scope(name or "softmax_cross_entropy_with_logits_sg") as scope:
        lb = array_ops.stop_gradient(convert_to_tensor(labels, dtype=lg.dtype),
                                     name="labels_stop_gradient")
        return softmax_cross_entropy_with_logits_v2(labels=lb, logits=lg, dim=dim,
                                                    name=scope)


def _as_rows(logits: Tensor, labels: Tensor, axis: int) -> tuple:
    """2-D [rows, classes] views for the kernel, and the loss shape to restore (or None)."""
    rank = logits.shape.ndims
    if rank is not None and axis not in (-1, rank - 1):
        raise NotImplementedError("tfteach's cross-entropy works along the last axis; "
                                  "transpose the logits first.")
    if rank == 2:
        return logits, labels, None
    if rank is None:
        raise ValueError("softmax_cross_entropy_with_logits needs logits of known rank.")
    classes = logits.shape.dims[-1] if rank else None
    if rank < 1 or classes is None:
        raise ValueError(f"logits need a known number of classes, got shape {logits.shape}.")
    restore = array_ops.slice_(array_ops.shape(logits), [0], [rank - 1])
    return (array_ops.reshape(logits, [-1, classes]), array_ops.reshape(labels, [-1, classes]),
            restore)


def sparse_softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None,
                                             logits: Any = None, name: str | None = None
                                             ) -> Tensor:
    """Per-example cross-entropy with integer class ``labels`` [batch] and ``logits`` [batch, n]."""
    _xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    lg = convert_to_tensor(logits)
    lb = convert_to_tensor(labels)
    if lb.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(with_hint(f"labels must be int32 or int64, got {lb.dtype.name}.", tr(
            "sparse labels are class indices; use the dense version for one-hot or probability "
            "labels.")))
    if lg.shape.ndims is not None and lb.shape.ndims is not None and \
            lb.shape.ndims != lg.shape.ndims - 1:
        raise ValueError(f"Rank mismatch: Rank of labels (received {lb.shape.ndims}) should "
                         f"equal rank of logits minus 1 (received {lg.shape.ndims}).")
    with lg.graph.name_scope(name or "SparseSoftmaxCrossEntropyWithLogits"):
        return lg.graph.create_op("SparseSoftmaxCrossEntropyWithLogits", [lg, lb], {
            "T": lg.dtype, "Tlabels": lb.dtype},
            name=name or "SparseSoftmaxCrossEntropyWithLogits").outputs[0]


# ---- dropout -----------------------------------------------------------------------------------
def dropout(x: Any, keep_prob: Any = None, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None, rate: Any = None) -> Tensor:
    """Keep each element with probability ``keep_prob`` (scaled by 1/keep_prob), else 0.

    Seeded like every random op (``tf.set_random_seed`` and ``seed=``).
    """
    if (keep_prob is None) == (rate is None):
        raise ValueError("dropout needs exactly one of keep_prob and rate.")
    t = convert_to_tensor(x)
    with t.graph.name_scope(name or "dropout"):
        if keep_prob is None:
            keep_prob = 1 - rate
        if isinstance(keep_prob, (int, float)) and not 0 < keep_prob <= 1:
            raise ValueError(f"keep_prob must be a scalar tensor or a float in the range "
                             f"(0, 1], got {keep_prob:g}")
        keep = convert_to_tensor(keep_prob, dtype=t.dtype, name="keep_prob")
        if const_value(keep) is not None and float(const_value(keep)) == 1.0:
            return t
        shape = array_ops.shape(t) if noise_shape is None else noise_shape
        noise = keep + random_ops.random_uniform(shape, seed=seed, dtype=t.dtype)
        kept = math_ops.floor(noise)
        out = math_ops.divide(t, keep) * kept
        out.set_shape(t.shape)
        return out

