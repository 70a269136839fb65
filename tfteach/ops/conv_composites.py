"""Convolutions TF 1.x composes from other ops, under TF's names:

- ``tf.nn.conv2d_transpose``: a ``Conv2DBackpropInput`` named ``conv2d_transpose`` (the
  gradient of a convolution is the transpose one wants), with TF's channel checks;
- ``tf.nn.conv1d``: ``ExpandDims`` of input and filter, a ``Conv2D`` named ``conv1d``,
  ``Squeeze``;
- ``tf.nn.separable_conv2d``: a ``DepthwiseConv2dNative`` named ``depthwise``, then a 1x1
  ``Conv2D`` named ``separable_conv2d``.

No op types of their own: kernels and gradients are Conv2D's and DepthwiseConv2dNative's.
"""
from __future__ import annotations

from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import const_value, convert_to_tensor
from tfteach.ops.conv_ops import conv2d, conv_attrs, float_input
from tfteach.ops.depthwise_conv_ops import depthwise_conv2d_native

__all__ = ["conv1d", "conv2d_transpose", "separable_conv2d"]


def _dim(t: Tensor, axis: int) -> int | None:
    return t.shape.dims[axis] if t.shape.rank else None


def conv2d_transpose(value: Any = None, filter: Any = None, output_shape: Any = None,
                     strides: Any = None, padding: str = "SAME", data_format: str = "NHWC",
                     name: str | None = None, input: Any = None, filters: Any = None,
                     dilations: Any = None) -> Tensor:
    """``tf.nn.conv2d_transpose``: ``value`` [N, H, W, in] with ``filter``
    [KH, KW, out, in] to ``output_shape`` [N, OH, OW, out]."""
    value = value if value is not None else input
    filter = filter if filter is not None else filters
    g = convert_to_tensor(value).graph
    with g.as_default(), g.name_scope(name or "conv2d_transpose") as scope:
        x = float_input(convert_to_tensor(value, name="value"), "Conv2DBackpropInput", "value")
        f = convert_to_tensor(filter, name="filter")
        axis = 3 if data_format == "NHWC" else 1
        _check_channels(_dim(x, axis), _dim(f, 3), "input channels does not match filter's "
                                                   "input channels")
        sizes = convert_to_tensor(output_shape, dtype=dtypes.int32, name="output_shape")
        if sizes.shape.rank is not None and list(sizes.shape.dims) != [4]:
            raise ValueError(f"output_shape must have shape (4,), got {sizes.shape}")
        known = const_value(sizes)
        if known is not None:
            _check_channels(int(known[axis]), _dim(f, 2),
                            "output_shape does not match filter's output channels")
        attrs = conv_attrs(strides, padding, data_format, dilations, "Conv2DBackpropInput")
        return g.create_op("Conv2DBackpropInput", [sizes, f, x], {"T": x.dtype, **attrs},
                           name=scope).outputs[0]


def _check_channels(a: int | None, b: int | None, what: str) -> None:
    if a is not None and b is not None and a != b:
        raise ValueError(with_hint(f"{what}, {a} != {b}",
                                   tr("conv2d_transpose's filter is [height, width, "
                                      "output_channels, input_channels].")))


def conv1d(value: Any = None, filters: Any = None, stride: Any = None, padding: Any = None,
           use_cudnn_on_gpu: Any = None, data_format: str | None = None,
           name: str | None = None, input: Any = None, dilations: Any = None) -> Tensor:
    """``tf.nn.conv1d``: ``value`` [N, W, C] (``NWC``) or [N, C, W] (``NCW``) with
    ``filters`` [KW, C, O], as a Conv2D over a height of 1."""
    value = value if value is not None else input
    g = convert_to_tensor(value).graph
    with g.as_default(), g.name_scope(name or "conv1d") as scope:
        if data_format in (None, "NHWC", "NWC"):
            fmt, start, stride4 = "NHWC", 1, [1, 1, _one(stride, "stride"), 1]
        elif data_format in ("NCHW", "NCW"):
            fmt, start, stride4 = "NCHW", 2, [1, 1, 1, _one(stride, "stride")]
        else:
            raise ValueError('data_format must be "NWC" or "NCW".')
        x = array_ops.expand_dims(value, start)
        f = array_ops.expand_dims(filters, 0)
        dil = None if dilations is None else [1, _one(dilations, "dilations")]
        out = conv2d(x, f, stride4, padding, use_cudnn_on_gpu is not False, fmt, dil,
                     name=scope)
        return array_ops.squeeze(out, [start])


def _one(value: Any, what: str) -> int:
    vals = [value] if isinstance(value, int) else list(value)
    if len(vals) == 3:
        vals = [vals[1]] if vals[0] == 1 else [vals[2]]
    if len(vals) != 1:
        raise ValueError(f"{what} should be of length 1 or 3 but was {len(vals)}")
    return int(vals[0])


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any, strides: Any,
                     padding: Any, rate: Any = None, name: str | None = None,
                     data_format: str | None = None, dilations: Any = None) -> Tensor:
    """``tf.nn.separable_conv2d``: a depthwise convolution, then a 1x1 convolution mixing
    its ``in_channels * channel_multiplier`` channels into ``out_channels``."""
    g = convert_to_tensor(input).graph
    with g.as_default(), g.name_scope(name or "separable_conv2d") as scope:
        x = convert_to_tensor(input, name="tensor_in")
        dw = convert_to_tensor(depthwise_filter, name="depthwise_filter")
        pw = convert_to_tensor(pointwise_filter, name="pointwise_filter")
        if pw.shape.rank is not None and (pw.shape.rank != 4 or
                                          any(d not in (None, 1) for d in pw.shape.dims[:2])):
            raise ValueError(f"Shape {pw.shape} must have rank 4 with a 1x1 window "
                             "(pointwise_filter is [1, 1, in_channels * multiplier, out])")
        fmt = data_format or "NHWC"
        rate = rate if rate is not None else dilations
        dil = None if rate is None else ([int(rate)] * 2 if isinstance(rate, int) else rate)
        depthwise = depthwise_conv2d_native(x, dw, strides, padding, fmt, dil,
                                            name="depthwise")
        return conv2d(depthwise, pw, [1, 1, 1, 1], "VALID", data_format=fmt, name=scope)
