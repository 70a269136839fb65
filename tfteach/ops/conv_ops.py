"""2-D convolution: ``Conv2D`` and its two gradient ops, ``Conv2DBackpropInput`` (also
``tf.nn.conv2d_transpose``, hence its own gradient) and ``Conv2DBackpropFilter``, with
TF 1.x's attrs (``strides``, ``padding`` SAME/VALID, ``dilations``, ``data_format``,
``use_cudnn_on_gpu``, ``explicit_paddings``).

Kernels are im2col + one matrix product, written against ``xp``: the padded image is viewed
as patches ``[N, OH, OW, KH, KW, C]`` (a strided view), reshaped to ``[N*OH*OW, KH*KW*C]``
and multiplied by the filter ``[KH*KW*C, O]``, so the work runs at BLAS speed. The filter
gradient is ``patches^T @ dy``; the input gradient is ``dy @ filter^T`` scattered back
(col2im) with one strided add per window offset, never a loop over pixels.
Where the input is deep (``_by_rows``: e.g. 64 channels, 5x5), the forward and filter
passes copy only the width's windows, rows first (``[HP, N*OW, KW*C]``, a KH-th of the
full im2col) and make one product per window row on a contiguous band of rows: fewer bytes
moved for the same products.

Layouts: kernels compute NHWC; an NCHW op is transposed to NHWC and back on every device.
TF 1.x's CPU kernels refused NCHW, but TF 2.x's graph mode (compat.v1, whose layout
optimizer rewrites NCHW on the CPU) runs it, and tfteach follows that.
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
from tfteach.ops.windows import (
    Window,
    check_format,
    check_padding,
    four,
    from_nhwc,
    in_format,
    nhwc_dims,
    pad_image,
    patches,
    to_nhwc,
    window_from_attrs,
    window_slices,
)

_ATTRS = ("strides", "padding", "data_format", "dilations", "use_cudnn_on_gpu",
          "explicit_paddings")


def conv_window(attrs: Any, filter_shape: Any) -> Window:
    return window_from_attrs(attrs, filter_hw=(int(filter_shape[0]), int(filter_shape[1])))


# ---- kernels (NHWC, against xp) -----------------------------------------------------------
def _columns(xp: Any, x: Any, win: Window) -> tuple[Any, tuple]:
    """im2col: ``[N*OH*OW, KH*KW*C]`` and the output's ``(N, OH, OW)``."""
    n, h, w, c = x.shape
    ah, aw = win.axes(h, w)
    view = patches(xp, pad_image(xp, x, ah, aw), win, ah.out, aw.out)
    return view.reshape(-1, win.kh * win.kw * c), (n, ah.out, aw.out)


def _by_rows(win: Window, c: int, o: int) -> bool:
    """Whether row bands move fewer bytes than a full im2col: they copy a KH-th of its
    columns but add KH partial outputs (deep inputs, e.g. 64 channels, gain; an RGB first
    layer does not)."""
    return win.kh > 1 and win.kw * c * (win.kh - 1) > 2 * win.kh * o


def _row_bands(xp: Any, x: Any, win: Window) -> tuple[Any, tuple]:
    """im2col along the width only, rows first: ``[HP, N*OW, KW*C]`` (every padded row,
    each output column's KW pixels), a KH-th of the full im2col's copy; the rows window
    offset ``i`` reads are ``_band(bands, win, i, oh)``. Also ``(N, OH, OW)``."""
    n, h, w, c = x.shape
    ah, aw = win.axes(h, w)
    xpad = pad_image(xp, x, ah, aw)
    s0, s1, s2, s3 = xpad.strides
    view = xp.lib.stride_tricks.as_strided(
        xpad, shape=(xpad.shape[1], n, aw.out, win.kw, c),
        strides=(s1, s0, s2 * win.sw, s2 * win.dw, s3))
    return xp.ascontiguousarray(view).reshape(xpad.shape[1], n * aw.out, win.kw * c), \
        (n, ah.out, aw.out)


def _band(bands: Any, win: Window, i: int, oh: int) -> Any:
    """``[OH*N*OW, KW*C]``: the padded rows that window row ``i`` reads (a view at
    stride 1)."""
    r0 = i * win.dh
    return bands[r0:r0 + (oh - 1) * win.sh + 1:win.sh].reshape(-1, bands.shape[-1])


def conv_nhwc(xp: Any, x: Any, f: Any, win: Window) -> Any:
    """One product of the im2col columns and the filter, or (``_by_rows``) one per window
    row ``i``: its band of rows times ``f[i]``, summed."""
    if not _by_rows(win, x.shape[-1], f.shape[-1]):
        cols, (n, oh, ow) = _columns(xp, x, win)
        return (cols @ f.reshape(-1, f.shape[-1])).reshape(n, oh, ow, f.shape[-1])
    bands, (n, oh, ow) = _row_bands(xp, x, win)
    rows = f.reshape(win.kh, -1, f.shape[-1])
    out = _band(bands, win, 0, oh) @ rows[0]
    for i in range(1, win.kh):
        out += _band(bands, win, i, oh) @ rows[i]
    return xp.ascontiguousarray(out.reshape(oh, n, ow, -1).transpose(1, 0, 2, 3))


def conv_input_grad_nhwc(xp: Any, in_shape: tuple, f: Any, dy: Any, win: Window) -> Any:
    """``dy @ filter^T`` scattered back (col2im); with stride 1 and no more output than
    twice the input channels, a VALID convolution of the padded ``dy`` with the flipped
    filter instead (its im2col copies ``O`` channels where col2im adds ``C``, and adding
    costs about twice what copying does)."""
    n, h, w, c = in_shape
    ah, aw = win.axes(h, w)
    if win.sh == win.sw == 1 and f.shape[-1] <= 2 * c:
        top = (win.kh - 1) * win.dh - ah.before
        left = (win.kw - 1) * win.dw - aw.before
        full = xp.zeros((n, h + (win.kh - 1) * win.dh, w + (win.kw - 1) * win.dw, f.shape[-1]),
                        dy.dtype)
        full[:, top:top + ah.out, left:left + aw.out, :] = dy
        flipped = xp.ascontiguousarray(f[::-1, ::-1].transpose(0, 1, 3, 2))
        return conv_nhwc(xp, full, flipped, Window(win.kh, win.kw, 1, 1, win.dh, win.dw))
    # Channels first while scattering, so each add runs along image rows, not along C.
    dcols = f.reshape(-1, f.shape[-1]) @ dy.reshape(-1, f.shape[-1]).T
    dcols = dcols.reshape(win.kh, win.kw, c, n, ah.out, aw.out)
    dxpad = xp.zeros((c, n, h + ah.before + ah.after, w + aw.before + aw.after), dy.dtype)
    for i, j, index in window_slices(win, ah.out, aw.out):
        dxpad[:, :, index[1], index[2]] += dcols[i, j]
    dx = dxpad[:, :, ah.before:ah.before + h, aw.before:aw.before + w]
    return xp.ascontiguousarray(dx.transpose(1, 2, 3, 0))


def conv_filter_grad_nhwc(xp: Any, x: Any, f_shape: tuple, dy: Any, win: Window) -> Any:
    """The im2col columns, transposed, times ``dy``; or (``_by_rows``) per window row
    ``i``: its band of rows, transposed, times ``dy`` (rows first)."""
    if not _by_rows(win, x.shape[-1], dy.shape[-1]):
        cols, _ = _columns(xp, x, win)
        return (cols.T @ dy.reshape(-1, dy.shape[-1])).reshape(f_shape)
    bands, (n, oh, ow) = _row_bands(xp, x, win)
    d = xp.ascontiguousarray(dy.transpose(1, 0, 2, 3)).reshape(-1, dy.shape[-1])
    df = xp.empty((win.kh, bands.shape[-1], d.shape[-1]), dtype=xp.result_type(x, dy))
    for i in range(win.kh):
        df[i] = _band(bands, win, i, oh).T @ d
    return df.reshape(f_shape)


def _conv_kernel(ctx, x, f):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    out = conv_nhwc(xp, to_nhwc(xp, x, fmt), f, conv_window(ctx.attrs, f.shape))
    return from_nhwc(xp, out.astype(x.dtype, copy=False), fmt)


def _input_grad_kernel(ctx, sizes, f, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    shape = tuple(nhwc_dims([int(v) for v in ctx.device.to_host(sizes).tolist()], fmt))
    dx = conv_input_grad_nhwc(xp, shape, f, to_nhwc(xp, dy, fmt), conv_window(ctx.attrs, f.shape))
    return from_nhwc(xp, dx.astype(dy.dtype, copy=False), fmt)


def _filter_grad_kernel(ctx, x, sizes, dy):
    xp, fmt = ctx.xp, ctx.attrs["data_format"]
    f_shape = tuple(int(v) for v in ctx.device.to_host(sizes).tolist())
    df = conv_filter_grad_nhwc(xp, to_nhwc(xp, x, fmt), f_shape, to_nhwc(xp, dy, fmt),
                               conv_window(ctx.attrs, f_shape))
    return df.astype(dy.dtype, copy=False)


# ---- shape functions -------------------------------------------------------------------------
def _rank4(op, t: Tensor, what: str) -> list | None:
    if t.shape.ndims is not None and t.shape.ndims != 4:
        raise shape_error(op, f"Shape must be rank 4 but is rank {t.shape.ndims}")
    return t.shape.dims if t.shape.ndims is not None else None


def _output_dims(op, x_dims: list | None, f_dims: list | None) -> TensorShape:
    """Conv2D's output shape from NHWC-ordered input dims and the filter's dims."""
    fmt = op.attrs["data_format"]
    x_nhwc = nhwc_dims(x_dims, fmt) or [None] * 4
    f = f_dims or [None] * 4
    if x_nhwc[3] is not None and f[2] is not None and x_nhwc[3] % f[2]:
        raise shape_error(op, f"Depth of input ({x_nhwc[3]}) is not a multiple of input "
                              f"depth of filter ({f[2]})")
    win = window_from_attrs(op.attrs, filter_hw=(f[0] or 1, f[1] or 1))
    oh = win.out_dim(x_nhwc[1], 0) if f[0] is not None else None
    ow = win.out_dim(x_nhwc[2], 1) if f[1] is not None else None
    return TensorShape(in_format([x_nhwc[0], oh, ow, f[3]], fmt))


def _conv_shape(op):
    x, f = op.inputs
    try:
        out = _output_dims(op, _rank4(op, x, "input"), _rank4(op, f, "filter"))
    except ValueError as e:
        if "for '" in str(e):
            raise
        raise shape_error(op, str(e)) from None
    return [(x.dtype, out)]


def sizes_shape(t: Tensor) -> TensorShape:
    """The shape a sizes input (``input_sizes`` / ``filter_sizes``) holds, as far as known."""
    value = const_value(t)
    if value is not None:
        return TensorShape([int(v) for v in value])
    if t.op.type in ("Shape", "Pack"):   # tf.stack([batch, 8, 8, 1]): the constant entries
        return array_ops.shape_value(t)
    return TensorShape([None] * 4)


register_op("Conv2D", _conv_shape, _conv_kernel, cheap=False)
register_op("Conv2DBackpropInput",
            lambda op: [(op.inputs[2].dtype, sizes_shape(op.inputs[0]))],
            _input_grad_kernel, cheap=False)
register_op("Conv2DBackpropFilter",
            lambda op: [(op.inputs[2].dtype, sizes_shape(op.inputs[1]))],
            _filter_grad_kernel, cheap=False)


def _sizes(t: Tensor) -> Tensor:
    return convert_to_tensor(array_ops.shape_of(t), dtype="int32")


def _conv_grad(op, grad):
    """TF's _Conv2DGrad: Conv2DBackpropInput for the input, Conv2DBackpropFilter for the
    filter, with the forward op's attrs."""
    x, f = op.inputs
    attrs = {"T": x.dtype, **{k: op.attrs[k] for k in _ATTRS}}
    g = grad.graph
    dx = g.create_op("Conv2DBackpropInput", [_sizes(x), f, grad], attrs,
                     name="Conv2DBackpropInput").outputs[0]
    df = g.create_op("Conv2DBackpropFilter", [x, _sizes(f), grad], attrs,
                     name="Conv2DBackpropFilter").outputs[0]
    return [dx, df]


set_gradient("Conv2D", _conv_grad)


def _input_grad_grad(op, grad):
    """TF's _Conv2DBackpropInputGrad (``conv2d_transpose``'s gradient): the filter's from
    Conv2DBackpropFilter, the output gradient's from a Conv2D of ``grad``."""
    _, f, dy = op.inputs
    attrs = {"T": dy.dtype, **{k: op.attrs[k] for k in _ATTRS}}
    g = grad.graph
    df = g.create_op("Conv2DBackpropFilter", [grad, _sizes(f), dy], attrs,
                     name="Conv2DBackpropFilter").outputs[0]
    ddy = g.create_op("Conv2D", [grad, f], attrs, name="Conv2D").outputs[0]
    return [None, df, ddy]


set_gradient("Conv2DBackpropInput", _input_grad_grad)


# ---- constructors ------------------------------------------------------------------------------
def conv_attrs(strides: Any, padding: Any, data_format: Any, dilations: Any, op_type: str,
               use_cudnn_on_gpu: bool = True) -> dict:
    """Conv2D's attrs, normalised and checked as TF's ``nn_ops.conv2d`` does."""
    fmt = check_format(data_format)
    if strides is None or padding is None:
        raise TypeError(f"{op_type} needs strides and padding, e.g. strides=[1, 1, 1, 1], "
                        "padding='SAME'.")
    st, dil = four(strides, "strides", fmt), four(dilations or 1, "dilations", fmt)
    batch_depth = (0, 1) if fmt == "NCHW" else (0, 3)
    if any(st[i] != 1 for i in batch_depth):
        raise ValueError(with_hint(
            "Current implementation does not yet support strides in the batch and depth "
            "dimensions.", tr("strides are [1, stride_h, stride_w, 1] in NHWC.")))
    return {"strides": st, "padding": check_padding(padding, op_type), "data_format": fmt,
            "dilations": dil, "use_cudnn_on_gpu": bool(use_cudnn_on_gpu),
            "explicit_paddings": []}


def float_input(value: Any, op_type: str, arg: str = "input") -> Tensor:
    t = convert_to_tensor(value)
    if not t.dtype.is_floating:
        raise TypeError(with_hint(
            f"Value passed to parameter '{arg}' has DataType {t.dtype.name} not in list of "
            f"allowed values: float16, bfloat16, float32, float64 (op: '{op_type}')",
            tr("cast it first: tf.cast(x, tf.float32).")))
    return t


def conv2d(input: Any, filter: Any = None, strides: Any = None, padding: Any = None,
           use_cudnn_on_gpu: bool = True, data_format: str = "NHWC", dilations: Any = None,
           name: str | None = None, filters: Any = None) -> Tensor:
    """``tf.nn.conv2d``: a 2-D convolution of ``input`` [N, H, W, C] with ``filter``
    [KH, KW, C, O] (TF 1.x signature; ``filters=`` is TF 2's name for ``filter``)."""
    x = float_input(input, "Conv2D")
    w = convert_to_tensor(filter if filter is not None else filters, dtype=x.dtype)
    attrs = conv_attrs(strides, padding, data_format, dilations, "Conv2D", use_cudnn_on_gpu)
    return x.graph.create_op("Conv2D", [x, w], {"T": x.dtype, **attrs},
                             name=name or "Conv2D").outputs[0]
