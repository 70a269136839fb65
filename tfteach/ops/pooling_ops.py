"""2-D pooling: ``MaxPool`` / ``MaxPoolGrad`` and ``AvgPool`` / ``AvgPoolGrad`` with TF 1.x's
attrs (``ksize``, ``strides``, ``padding`` SAME/VALID, ``data_format``).

Kernels loop over the window's offsets (``KH * KW`` vectorised steps over every output
position), never over pixels. As in TF: SAME padding never wins a max (pads are -inf) and
is left out of an average (each output divides by the number of real inputs it saw); the
max gradient goes to the first maximum of each window in row-major order (TF's CPU
kernel). NCHW is transposed to NHWC and back, on every device (as TF 2.x's compat.v1 graph
mode runs it on the CPU; TF 1.x refused it there).
"""
from __future__ import annotations

from typing import Any

from tfteach.errors import with_hint
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import const_value, convert_to_tensor, shape_error
from tfteach.ops.conv_ops import float_input
from tfteach.ops.windows import (
    Window,
    check_format,
    check_padding,
    crop,
    four,
    from_nhwc,
    in_format,
    nhwc_dims,
    pad_image,
    to_nhwc,
    window_from_attrs,
    window_slices,
)


def _geometry(x: Any, attrs: Any) -> tuple:
    win = window_from_attrs(attrs)
    ah, aw = win.axes(x.shape[1], x.shape[2])
    return win, ah, aw


# ---- max ---------------------------------------------------------------------------------------
def max_pool_nhwc(xp: Any, x: Any, attrs: Any) -> Any:
    win, ah, aw = _geometry(x, attrs)
    xpad = pad_image(xp, x, ah, aw, value=-xp.inf)
    out = None
    for _, _, index in window_slices(win, ah.out, aw.out):
        out = xpad[index].copy() if out is None else xp.maximum(out, xpad[index], out=out)
    return out


def max_pool_grad_nhwc(xp: Any, x: Any, y: Any, dy: Any, attrs: Any) -> Any:
    """Each output's gradient to the first input of its window equal to the max."""
    win, ah, aw = _geometry(x, attrs)
    xpad = pad_image(xp, x, ah, aw, value=-xp.inf)
    dxpad = xp.zeros(xpad.shape, dy.dtype)
    taken = xp.zeros(y.shape, bool)
    for _, _, index in window_slices(win, ah.out, aw.out):
        hit = (xpad[index] == y) & ~taken
        dxpad[index] += xp.where(hit, dy, 0)
        taken |= hit
    return xp.ascontiguousarray(crop(dxpad, ah, aw))


def _max_kernel(ctx, x):
    fmt = ctx.attrs["data_format"]
    return from_nhwc(ctx.xp, max_pool_nhwc(ctx.xp, to_nhwc(ctx.xp, x, fmt), ctx.attrs), fmt)


def _max_grad_kernel(ctx, x, y, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    dx = max_pool_grad_nhwc(xp, to_nhwc(xp, x, fmt), to_nhwc(xp, y, fmt), to_nhwc(xp, dy, fmt),
                            ctx.attrs)
    return from_nhwc(xp, dx, fmt)


# ---- average -----------------------------------------------------------------------------------
def _counts(xp: Any, win: Window, ah: Any, aw: Any, h: int, w: int, dtype: Any) -> Any:
    """How many real (unpadded) inputs each output position averages: [1, OH, OW, 1]."""
    rows = xp.zeros((1, h + ah.before + ah.after, w + aw.before + aw.after, 1), dtype)
    rows[:, ah.before:ah.before + h, aw.before:aw.before + w, :] = 1
    total = xp.zeros((1, ah.out, aw.out, 1), dtype)
    for _, _, index in window_slices(win, ah.out, aw.out):
        total += rows[index]
    return total


def avg_pool_nhwc(xp: Any, x: Any, attrs: Any) -> Any:
    win, ah, aw = _geometry(x, attrs)
    xpad = pad_image(xp, x, ah, aw)
    total = xp.zeros((x.shape[0], ah.out, aw.out, x.shape[3]), x.dtype)
    for _, _, index in window_slices(win, ah.out, aw.out):
        total += xpad[index]
    total /= _counts(xp, win, ah, aw, x.shape[1], x.shape[2], x.dtype)
    return total


def avg_pool_grad_nhwc(xp: Any, in_shape: tuple, dy: Any, attrs: Any) -> Any:
    n, h, w, c = in_shape
    win = window_from_attrs(attrs)
    ah, aw = win.axes(h, w)
    share = dy / _counts(xp, win, ah, aw, h, w, dy.dtype)
    dxpad = xp.zeros((n, h + ah.before + ah.after, w + aw.before + aw.after, c), dy.dtype)
    for _, _, index in window_slices(win, ah.out, aw.out):
        dxpad[index] += share
    return xp.ascontiguousarray(crop(dxpad, ah, aw))


def _avg_kernel(ctx, x):
    fmt = ctx.attrs["data_format"]
    return from_nhwc(ctx.xp, avg_pool_nhwc(ctx.xp, to_nhwc(ctx.xp, x, fmt), ctx.attrs), fmt)


def _avg_grad_kernel(ctx, sizes, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    shape = tuple(nhwc_dims([int(v) for v in ctx.device.to_host(sizes).tolist()], fmt))
    return from_nhwc(xp, avg_pool_grad_nhwc(xp, shape, to_nhwc(xp, dy, fmt), ctx.attrs), fmt)


# ---- shapes, registration, gradients -----------------------------------------------------------
def _pool_shape(op):
    x = op.inputs[0]
    if x.shape.ndims is not None and x.shape.ndims != 4:
        raise shape_error(op, f"Shape must be rank 4 but is rank {x.shape.ndims}")
    fmt = op.attrs["data_format"]
    dims = nhwc_dims(x.shape.dims, fmt) or [None] * 4
    win = window_from_attrs(op.attrs)
    try:
        out = [dims[0], win.out_dim(dims[1], 0), win.out_dim(dims[2], 1), dims[3]]
    except ValueError as e:
        raise shape_error(op, str(e)) from None
    return [(x.dtype, TensorShape(in_format(out, fmt)))]


def _avg_grad_shape(op):
    sizes = op.inputs[0]
    value = const_value(sizes)
    shape = TensorShape([int(v) for v in value]) if value is not None else \
        array_ops.shape_value(sizes) if sizes.op.type == "Shape" else TensorShape([None] * 4)
    return [(op.inputs[1].dtype, shape)]


def _pool_attrs(op) -> dict:
    keys = ("ksize", "strides", "padding", "data_format") + (
        ("explicit_paddings",) if "explicit_paddings" in op.attrs else ())
    return {"T": op.inputs[0].dtype, **{k: op.attrs[k] for k in keys}}


def _max_grad(op, grad):
    x, y = op.inputs[0], op.outputs[0]
    return [grad.graph.create_op("MaxPoolGrad", [x, y, grad], _pool_attrs(op),
                                 name="MaxPoolGrad").outputs[0]]


def _avg_grad(op, grad):
    x = op.inputs[0]
    sizes = convert_to_tensor(array_ops.shape_of(x), dtype="int32")
    return [grad.graph.create_op("AvgPoolGrad", [sizes, grad], _pool_attrs(op),
                                 name="AvgPoolGrad").outputs[0]]


register_op("MaxPool", _pool_shape, _max_kernel, cheap=False)
register_op("MaxPoolGrad", lambda op: [(op.inputs[2].dtype, op.inputs[0].shape)],
            _max_grad_kernel, cheap=False)
set_gradient("MaxPool", _max_grad)
register_op("AvgPool", _pool_shape, _avg_kernel, cheap=False)
register_op("AvgPoolGrad", _avg_grad_shape, _avg_grad_kernel, cheap=False)
set_gradient("AvgPool", _avg_grad)


# ---- constructors ------------------------------------------------------------------------------
def _pool(op_type: str, value: Any, ksize: Any, strides: Any, padding: Any, data_format: Any,
          name: str | None, extra: dict) -> Tensor:
    x = float_input(value, op_type, "value")
    fmt = check_format(data_format)
    if ksize is None or strides is None or padding is None:
        raise TypeError(f"{op_type} needs ksize, strides and padding.")
    ks, st = four(ksize, "ksize", fmt), four(strides, "strides", fmt)
    batch, depth = (0, 1) if fmt == "NCHW" else (0, 3)
    if ks[batch] != 1 or st[batch] != 1 or ks[depth] != 1 or st[depth] != 1:
        raise ValueError(with_hint(
            "Pooling is not yet supported on the batch or depth dimension.",
            tr("ksize and strides are [1, height, width, 1] in NHWC.")))
    attrs = {"T": x.dtype, "ksize": ks, "strides": st,
             "padding": check_padding(padding, op_type), "data_format": fmt, **extra}
    return x.graph.create_op(op_type, [x], attrs, name=name or op_type).outputs[0]


def max_pool(value: Any, ksize: Any = None, strides: Any = None, padding: Any = None,
             data_format: str = "NHWC", name: str | None = None, input: Any = None) -> Tensor:
    """``tf.nn.max_pool``: the maximum of each ``ksize`` window, moved by ``strides``."""
    return _pool("MaxPool", value if value is not None else input, ksize, strides, padding,
                 data_format, name, {"explicit_paddings": []})


def avg_pool(value: Any, ksize: Any = None, strides: Any = None, padding: Any = None,
             data_format: str = "NHWC", name: str | None = None, input: Any = None) -> Tensor:
    """``tf.nn.avg_pool``: the mean of each window (SAME's padding is not counted)."""
    return _pool("AvgPool", value if value is not None else input, ksize, strides, padding,
                 data_format, name, {})
