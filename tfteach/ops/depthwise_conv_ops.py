"""Depthwise 2-D convolution: ``DepthwiseConv2dNative`` and its two gradient ops,
``DepthwiseConv2dNativeBackpropInput`` and ``DepthwiseConv2dNativeBackpropFilter``
(``tf.nn.depthwise_conv2d``; ``tf.nn.separable_conv2d`` adds a 1x1 ``Conv2D``).

Each input channel ``c`` has its own ``M`` filters (filter ``[KH, KW, C, M]``); output
channel ``c * M + m`` is channel ``c`` convolved with filter ``[:, :, c, m]``. Kernels work
on the strided patch view ``[N, OH, OW, KH, KW, C]`` of the padded NHWC image (shared with
Conv2D through ``windows``) with one ``einsum``; the input gradient adds back one strided
block per window offset (col2im), never a loop over pixels. NCHW is transposed to NHWC and
back, as for Conv2D.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.ops import array_ops
from tfteach.ops.common import convert_to_tensor, host_ints, shape_error
from tfteach.ops.conv_ops import conv_attrs, conv_window, float_input, sizes_shape
from tfteach.ops import windows

__all__ = ["depthwise_conv2d_native", "depthwise_conv2d"]

_ATTRS = ("strides", "padding", "data_format", "dilations", "explicit_paddings")


# ---- kernels (NHWC, against xp) -----------------------------------------------------------
def _view(xp: Any, x: Any, win: windows.Window) -> tuple[Any, Any, Any]:
    ah, aw = win.axes(x.shape[1], x.shape[2])
    return windows.patches(xp, windows.pad_image(xp, x, ah, aw), win, ah.out, aw.out), ah, aw


def _forward(ctx: Any, x: Any, f: Any) -> Any:
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    x = windows.to_nhwc(xp, x, fmt)
    view, ah, aw = _view(xp, x, conv_window(ctx.attrs, f.shape))
    out = xp.einsum("nhwijc,ijcm->nhwcm", view, f)
    out = out.reshape(x.shape[0], ah.out, aw.out, f.shape[2] * f.shape[3])
    return windows.from_nhwc(xp, out.astype(x.dtype, copy=False), fmt)


def _input_grad(ctx: Any, sizes: Any, f: Any, dy: Any) -> Any:
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    n, h, w, c = windows.nhwc_dims(host_ints(ctx, sizes), fmt)
    win = conv_window(ctx.attrs, f.shape)
    ah, aw = win.axes(h, w)
    dy5 = windows.to_nhwc(xp, dy, fmt).reshape(n, ah.out, aw.out, c, f.shape[3])
    dxpad = xp.zeros((n, h + ah.before + ah.after, w + aw.before + aw.after, c), dy.dtype)
    for i, j, index in windows.window_slices(win, ah.out, aw.out):
        dxpad[index] += xp.einsum("nhwcm,cm->nhwc", dy5, f[i, j])
    dx = dxpad[:, ah.before:ah.before + h, aw.before:aw.before + w, :]
    return windows.from_nhwc(xp, xp.ascontiguousarray(dx), fmt)


def _filter_grad(ctx: Any, x: Any, sizes: Any, dy: Any) -> Any:
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    f_shape = host_ints(ctx, sizes)
    x = windows.to_nhwc(xp, x, fmt)
    view, ah, aw = _view(xp, x, conv_window(ctx.attrs, f_shape))
    dy5 = windows.to_nhwc(xp, dy, fmt).reshape(x.shape[0], ah.out, aw.out, f_shape[2], f_shape[3])
    return xp.einsum("nhwijc,nhwcm->ijcm", view, dy5).astype(dy.dtype, copy=False)


# ---- shape function and registration ----------------------------------------------------------
def _shape(op: Any) -> list:
    x, f = op.inputs
    for t in (x, f):
        if t.shape.rank is not None and t.shape.rank != 4:
            raise shape_error(op, f"Shape must be rank 4 but is rank {t.shape.rank}")
    fmt = op.attrs["data_format"]
    xd = windows.nhwc_dims(list(x.shape.dims), fmt) if x.shape.rank else [None] * 4
    fd = list(f.shape.dims) if f.shape.rank else [None] * 4
    if xd[3] is not None and fd[2] is not None and xd[3] != fd[2]:
        raise shape_error(op, f"Dimensions must be equal, but are {xd[3]} and {fd[2]}")
    win = windows.window_from_attrs(op.attrs, filter_hw=(fd[0] or 1, fd[1] or 1))
    oh = win.out_dim(xd[1], 0) if fd[0] is not None else None
    ow = win.out_dim(xd[2], 1) if fd[1] is not None else None
    depth = fd[2] * fd[3] if fd[2] is not None and fd[3] is not None else None
    return [(x.dtype, TensorShape(windows.in_format([xd[0], oh, ow, depth], fmt)))]


register_op("DepthwiseConv2dNative", _shape, _forward, cheap=False)
register_op("DepthwiseConv2dNativeBackpropInput",
            lambda op: [(op.inputs[2].dtype, sizes_shape(op.inputs[0]))], _input_grad,
            cheap=False)
register_op("DepthwiseConv2dNativeBackpropFilter",
            lambda op: [(op.inputs[2].dtype, sizes_shape(op.inputs[1]))], _filter_grad,
            cheap=False)


def _grad(op: Any, grad: Tensor) -> list:
    """TF's _DepthwiseConv2dNativeGrad: one backprop op per input, with the forward attrs."""
    x, f = op.inputs
    attrs = {"T": x.dtype, **{k: op.attrs[k] for k in _ATTRS}}
    g = grad.graph
    dx = g.create_op("DepthwiseConv2dNativeBackpropInput", [array_ops.shape(x), f, grad],
                     attrs, name="DepthwiseConv2dNativeBackpropInput").outputs[0]
    df = g.create_op("DepthwiseConv2dNativeBackpropFilter", [x, array_ops.shape(f), grad],
                     attrs, name="DepthwiseConv2dNativeBackpropFilter").outputs[0]
    return [dx, df]


set_gradient("DepthwiseConv2dNative", _grad)


# ---- constructors ----------------------------------------------------------------------------
def depthwise_conv2d_native(input: Any, filter: Any, strides: Any, padding: Any,
                            data_format: str = "NHWC", dilations: Any = None,
                            name: str | None = None) -> Tensor:
    """``tf.nn.depthwise_conv2d_native``: the op itself."""
    x = float_input(input, "DepthwiseConv2dNative")
    w = convert_to_tensor(filter, dtype=x.dtype)
    attrs = conv_attrs(strides, padding, data_format, dilations, "DepthwiseConv2dNative")
    attrs.pop("use_cudnn_on_gpu")
    return x.graph.create_op("DepthwiseConv2dNative", [x, w], {"T": x.dtype, **attrs},
                             name=name or "DepthwiseConv2dNative").outputs[0]


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any, rate: Any = None,
                     name: str | None = None, data_format: str | None = None,
                     dilations: Any = None) -> Tensor:
    """``tf.nn.depthwise_conv2d``: ``in_channels * channel_multiplier`` output channels;
    ``rate`` (or ``dilations``) dilates the filter."""
    x = convert_to_tensor(input)
    with x.graph.as_default(), x.graph.name_scope(name or "depthwise") as scope:
        x = convert_to_tensor(x, name="tensor_in")
        w = convert_to_tensor(filter, name="filter_in")
        return depthwise_conv2d_native(x, w, strides, padding, data_format or "NHWC",
                                       _rate(rate, dilations), name=scope)


def _rate(rate: Any, dilations: Any) -> Any:
    value = rate if rate is not None else dilations
    if value is None:
        return None
    pair = [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]
    return pair
