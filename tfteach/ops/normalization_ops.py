"""Normalisation ops: local response normalisation (``LRN`` / ``LRNGrad``) and batch
normalisation (``FusedBatchNormV3`` / ``FusedBatchNormGradV3``), as TF 1.x builds them.

LRN along the channel axis (the last): ``sqr_sum[c] = sum(x[c - r .. c + r] ** 2)`` and
``y = x / (bias + alpha * sqr_sum) ** beta``; windowed channel sums are one vectorised add
per offset (``2r + 1`` of them).

FusedBatchNormV3's outputs, as TF's CPU kernel: ``y``, ``batch_mean``, ``batch_variance``
(in training the variance with Bessel's correction, ``n / (n - 1)``, which the moving
average uses; the normalisation itself uses the biased one), ``reserve_space_1`` (the batch
mean), ``reserve_space_2`` (the biased batch variance) and an empty ``reserve_space_3``. In
inference (``is_training=False``) the given mean and variance normalise and pass through.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor, shape_error
from tfteach.ops.conv_ops import float_input
from tfteach.ops.windows import check_format


# ---- LRN ---------------------------------------------------------------------------------------
def _channel_window_sum(xp: Any, v: Any, radius: int) -> Any:
    """``out[..., c] = sum(v[..., c - radius .. c + radius])`` (clipped at the edges)."""
    depth = v.shape[-1]
    out = v.copy()
    for k in range(1, min(radius, depth - 1) + 1):
        out[..., k:] += v[..., :-k]
        out[..., :-k] += v[..., k:]
    return out


def _lrn_norm(ctx, x):
    a = ctx.attrs
    return a["bias"] + a["alpha"] * _channel_window_sum(ctx.xp, x * x, a["depth_radius"])


def _lrn_kernel(ctx, x):
    return (x / _lrn_norm(ctx, x) ** ctx.attrs["beta"]).astype(x.dtype, copy=False)


def _lrn_grad_kernel(ctx, dy, x, y):
    """dx_j = dy_j * N_j^-beta - 2 alpha beta x_j * sum_i dy_i y_i / N_i (i near j)."""
    a = ctx.attrs
    norm = _lrn_norm(ctx, x)
    spread = _channel_window_sum(ctx.xp, dy * y / norm, a["depth_radius"])
    dx = dy * norm ** -a["beta"] - 2 * a["alpha"] * a["beta"] * x * spread
    return dx.astype(dy.dtype, copy=False)


def _lrn_shape(op):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise shape_error(op, f"Shape must be rank 4 but is rank {x.shape.ndims}")
    return [(x.dtype, x.shape)]


def _lrn_grad(op, grad):
    attrs = {k: op.attrs[k] for k in ("T", "depth_radius", "bias", "alpha", "beta")}
    return [grad.graph.create_op("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs,
                                 name="LRNGrad").outputs[0]]


register_op("LRN", _lrn_shape, _lrn_kernel, cheap=False)
register_op("LRNGrad", lambda op: [(op.inputs[0].dtype, op.inputs[1].shape)],
            _lrn_grad_kernel, cheap=False)
set_gradient("LRN", _lrn_grad)


def local_response_normalization(input: Any, depth_radius: int = 5, bias: float = 1.0,
                                 alpha: float = 1.0, beta: float = 0.5,
                                 name: str | None = None) -> Tensor:
    """``tf.nn.lrn``: each channel divided by ``(bias + alpha * sum of squares of its
    2 * depth_radius + 1 neighbours) ** beta`` (AlexNet's normalisation)."""
    x = float_input(input, "LRN")
    attrs = {"T": x.dtype, "depth_radius": int(depth_radius), "bias": float(bias),
             "alpha": float(alpha), "beta": float(beta)}
    return x.graph.create_op("LRN", [x], attrs, name=name or "LRN").outputs[0]


lrn = local_response_normalization


# ---- FusedBatchNormV3 --------------------------------------------------------------------------
def _to_last(xp: Any, x: Any, fmt: str) -> Any:
    return xp.moveaxis(x, 1, -1) if fmt == "NCHW" else x


def _from_last(xp: Any, x: Any, fmt: str) -> Any:
    return xp.ascontiguousarray(xp.moveaxis(x, -1, 1)) if fmt == "NCHW" else x


def _bn_kernel(ctx, x, scale, offset, mean, variance):
    xp, a = ctx.xp, ctx.attrs
    fmt, eps = a["data_format"], a["epsilon"]
    xl = _to_last(xp, x, fmt).astype(scale.dtype, copy=False)
    axes = tuple(range(xl.ndim - 1))
    if a["is_training"]:
        count = xl.size // xl.shape[-1]
        b_mean = xl.mean(axis=axes)
        b_var = ((xl - b_mean) ** 2).mean(axis=axes)
        unbiased = b_var * (count / max(count - 1, 1))
        factor = a.get("exponential_avg_factor", 1.0)
        run_mean = b_mean if factor == 1.0 else (1 - factor) * mean + factor * b_mean
        run_var = unbiased if factor == 1.0 else (1 - factor) * variance + factor * unbiased
    else:
        b_mean, b_var, run_mean, run_var = mean, variance, mean, variance
    y = (xl - b_mean) * (scale / xp.sqrt(b_var + eps)) + offset
    y = _from_last(xp, y.astype(x.dtype, copy=False), fmt)
    return y, run_mean, run_var, b_mean, b_var, xp.zeros((0,), scale.dtype)


def _bn_grad_kernel(ctx, dy, x, scale, saved_mean, saved_var, _reserve):
    xp, a = ctx.xp, ctx.attrs
    fmt = a["data_format"]
    dyl = _to_last(xp, dy, fmt).astype(scale.dtype, copy=False)
    xl = _to_last(xp, x, fmt).astype(scale.dtype, copy=False)
    axes = tuple(range(xl.ndim - 1))
    rstd = 1 / xp.sqrt(saved_var + a["epsilon"])
    xhat = (xl - saved_mean) * rstd
    d_offset = dyl.sum(axis=axes)
    d_scale = (dyl * xhat).sum(axis=axes)
    if a["is_training"]:
        count = xl.size // xl.shape[-1]
        dx = (scale * rstd / count) * (count * dyl - d_offset - xhat * d_scale)
    else:
        dx = dyl * (scale * rstd)
    empty = xp.zeros((0,), scale.dtype)
    return _from_last(xp, dx.astype(dy.dtype, copy=False), fmt), d_scale, d_offset, empty, empty


def _bn_shape(op):
    x, scale = op.inputs[0], op.inputs[1]
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise shape_error(op, f"input must be 4-dimensional, but is rank {x.shape.ndims}")
    axis = 1 if op.attrs["data_format"] == "NCHW" else 3
    depth = x.shape.dims[axis] if x.shape.dims is not None else None
    if depth is None and scale.shape.dims:
        depth = scale.shape.dims[0]
    vec = (scale.dtype, TensorShape([depth]))
    return [(x.dtype, x.shape), vec, vec, vec, vec, (scale.dtype, TensorShape(None))]


def _bn_grad_shape(op):
    dy, scale = op.inputs[0], op.inputs[2]
    vec = (scale.dtype, scale.shape)
    empty = (scale.dtype, TensorShape([0]))
    return [(dy.dtype, op.inputs[1].shape), vec, vec, empty, empty]


def _bn_grad(op, dy, *unused):
    """TF's _FusedBatchNormV3Grad: x, scale and offset gradients from FusedBatchNormGradV3."""
    x, scale = op.inputs[0], op.inputs[1]
    if op.attrs["is_training"]:
        saved = [op.outputs[3], op.outputs[4], op.outputs[5]]
    else:
        saved = [op.inputs[3], op.inputs[4], op.outputs[5]]
    attrs = {k: op.attrs[k] for k in ("T", "U", "epsilon", "data_format", "is_training")}
    grad = dy.graph.create_op("FusedBatchNormGradV3", [dy, x, scale, *saved], attrs,
                              name="FusedBatchNormGradV3")
    return [grad.outputs[0], grad.outputs[1], grad.outputs[2], None, None]


register_op("FusedBatchNormV3", _bn_shape, _bn_kernel, cheap=False)
register_op("FusedBatchNormGradV3", _bn_grad_shape, _bn_grad_kernel, cheap=False)
set_gradient("FusedBatchNormV3", _bn_grad)


def fused_batch_norm(x: Any, scale: Any, offset: Any, mean: Any = None, variance: Any = None,
                     epsilon: float = 0.001, data_format: str = "NHWC", is_training: bool = True,
                     name: str | None = None, exponential_avg_factor: float = 1.0) -> tuple:
    """``tf.nn.fused_batch_norm``: ``(y, batch_mean, batch_variance)`` of a 4-D ``x``.

    In training, ``mean`` and ``variance`` may be omitted (empty tensors, as TF passes)."""
    t = float_input(x, "FusedBatchNormV3", "x")
    sc = convert_to_tensor(scale)
    fmt = check_format(data_format)
    if not is_training and (mean is None or variance is None):
        raise ValueError("both mean and variance must be provided in inference mode "
                         "(is_training=False).")
    empty = [] if mean is None or variance is None else None
    mn = convert_to_tensor(empty if mean is None else mean, dtype=sc.dtype)
    vr = convert_to_tensor(empty if variance is None else variance, dtype=sc.dtype)
    attrs = {"T": t.dtype, "U": sc.dtype, "epsilon": max(float(epsilon), 1.001e-5),
             "exponential_avg_factor": float(exponential_avg_factor), "data_format": fmt,
             "is_training": bool(is_training)}
    op = t.graph.create_op("FusedBatchNormV3", [t, sc, convert_to_tensor(offset, dtype=sc.dtype),
                                                mn, vr], attrs, name=name or "FusedBatchNormV3")
    return op.outputs[0], op.outputs[1], op.outputs[2]



# ---- composites: moments and batch_normalization (TF's nn_impl, no op types of their own) -------
def moments(x: Any, axes: Any, shift: Any = None, name: str | None = None,
            keep_dims: bool | None = None, keepdims: bool | None = None) -> tuple:
    """``tf.nn.moments``: the mean and (biased) variance of ``x`` over ``axes``."""
    t = convert_to_tensor(x)
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with t.graph.name_scope(name or "moments"):
        mean = math_ops.reduce_mean(t, axes, keepdims=True, name="mean")
        spread = math_ops.squared_difference(t, array_ops.stop_gradient(mean))
        variance = math_ops.reduce_mean(spread, axes, keepdims=True, name="variance")
        if not keep:
            mean, variance = array_ops.squeeze(mean, axes), array_ops.squeeze(variance, axes)
        return mean, variance


def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: float, name: str | None = None) -> Tensor:
    """``tf.nn.batch_normalization``: ``(x - mean) * scale / sqrt(variance + eps) + offset``
    (``batchnorm/Rsqrt``, ``mul``, ``mul_1``, ``mul_2``, ``sub``, ``add_1``, as TF)."""
    t = convert_to_tensor(x)
    with t.graph.name_scope(name or "batchnorm"):
        inv = math_ops.rsqrt(convert_to_tensor(variance) + variance_epsilon)
        if scale is not None:
            inv *= convert_to_tensor(scale)
        moved = convert_to_tensor(mean) * inv
        shift = -moved if offset is None else convert_to_tensor(offset) - moved
        return t * inv + shift
