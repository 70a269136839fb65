"""``tf.layers.conv2d_transpose`` and ``tf.layers.separable_conv2d`` (classes
``Conv2DTranspose``, ``SeparableConv2D``), with TF's variables and op names.

- ``Conv2DTranspose``: ``kernel`` [kh, kw, filters, in_channels], ``bias`` [filters]; the
  output size per spatial axis is TF's ``deconv_output_length`` (``valid``:
  ``in * stride + max(k - stride, 0)``, ``same``: ``in * stride``), the op
  ``conv2d_transpose/conv2d_transpose`` (a Conv2DBackpropInput).
- ``SeparableConv2D``: ``depthwise_kernel`` [kh, kw, in, depth_multiplier],
  ``pointwise_kernel`` [1, 1, in * depth_multiplier, filters], ``bias``; the op
  ``separable_conv2d/separable_conv2d``.

State: a layer's scope and variables, fixed after its first call (``Layer``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.ops import array_ops, init_ops, nn_ops
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.conv_composites import conv2d_transpose as nn_conv2d_transpose
from tfteach.ops.conv_composites import separable_conv2d as nn_separable_conv2d
from tfteach.ops.layer_base import Layer, channels, data_format, pair, refuse_unsupported
from tfteach.ops.variable_scope import get_variable

__all__ = ["Conv2DTranspose", "SeparableConv2D", "conv2d_transpose", "separable_conv2d"]


class _ConvLayer(Layer):
    """Arguments that both layers take, as TF's ``Conv2D`` base does."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any, padding: str,
                 fmt: str, dilation_rate: Any, activation: Callable | None, use_bias: bool,
                 bias_initializer: Any, trainable: bool, name: str | None, reuse: Any) -> None:
        self.filters, self.kernel_size = int(filters), pair(kernel_size)
        self.strides, self.dilation_rate = pair(strides), pair(dilation_rate)
        self.padding, self.data_format = padding.upper(), data_format(fmt)
        self.activation, self.use_bias = activation, use_bias
        self.bias_initializer = bias_initializer or init_ops.Zeros()
        self.trainable, self.name, self._reuse = trainable, name, reuse
        self.bias: Any = None

    def _variable(self, name: str, shape: list, initializer: Any, regularizer: Any) -> Any:
        return get_variable(name, shape, initializer=initializer, regularizer=regularizer,
                            trainable=self.trainable)

    def _finish(self, out: Tensor, bias_regularizer: Any) -> Tensor:
        if self.use_bias:
            self.bias = self._variable("bias", [self.filters], self.bias_initializer,
                                       bias_regularizer)
            out = nn_ops.bias_add(out, self.bias, data_format=self.data_format)
        return self.activation(out) if self.activation is not None else out

    @property
    def trainable_variables(self) -> list:
        return self.variables if self.trainable else []


def _deconv_length(size: Any, k: int, padding: str, stride: int, dilation: int) -> Any:
    k = k + (k - 1) * (dilation - 1)
    if padding == "VALID":
        return size * stride + max(k - stride, 0)
    return size * stride


class Conv2DTranspose(_ConvLayer):
    """A transposed 2-D convolution (a "deconvolution") layer."""

    _default_name = "conv2d_transpose"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str = "channels_last",
                 activation: Callable | None = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
                 reuse: Any = None, **unused: Any) -> None:
        refuse_unsupported("Conv2DTranspose", activity_regularizer=activity_regularizer,
                           kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
        super().__init__(filters, kernel_size, strides, padding, data_format, (1, 1),
                         activation, use_bias, bias_initializer, trainable, name, reuse)
        self.kernel_initializer, self.kernel_regularizer = kernel_initializer, kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel: Any = None

    @property
    def variables(self) -> list:
        return [v for v in (self.kernel, self.bias) if v is not None]

    weights = variables

    def __call__(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        depth = channels(x, self.data_format)
        with self._open_scope():
            self.kernel = self._variable("kernel", [*self.kernel_size, self.filters, depth],
                                         self.kernel_initializer, self.kernel_regularizer)
            shape = self._output_shape(x)
            out = nn_conv2d_transpose(x, self.kernel, array_ops.stack(shape),
                                      self._strides4(), self.padding, self.data_format)
            out.set_shape([d if isinstance(d, int) else None for d in shape])
            return self._finish(out, self.bias_regularizer)

    apply = __call__

    def _strides4(self) -> list:
        sh, sw = self.strides
        return [1, 1, sh, sw] if self.data_format == "NCHW" else [1, sh, sw, 1]

    def _output_shape(self, x: Tensor) -> list:
        dims = list(x.shape.dims)
        h_axis, w_axis = (2, 3) if self.data_format == "NCHW" else (1, 2)
        dynamic = array_ops.shape(x)
        sizes = [d if d is not None else dynamic[i] for i, d in enumerate(dims)]
        oh = _deconv_length(sizes[h_axis], self.kernel_size[0], self.padding, self.strides[0], 1)
        ow = _deconv_length(sizes[w_axis], self.kernel_size[1], self.padding, self.strides[1], 1)
        return [sizes[0], self.filters, oh, ow] if self.data_format == "NCHW" else \
            [sizes[0], oh, ow, self.filters]


def conv2d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last",
                     activation: Callable | None = None, use_bias: bool = True,
                     kernel_initializer: Any = None, bias_initializer: Any = None,
                     kernel_regularizer: Any = None, bias_regularizer: Any = None,
                     activity_regularizer: Any = None, kernel_constraint: Any = None,
                     bias_constraint: Any = None, trainable: bool = True,
                     name: str | None = None, reuse: Any = None) -> Tensor:
    """Functional ``Conv2DTranspose`` in scope ``name`` (default ``conv2d_transpose``)."""
    return Conv2DTranspose(filters, kernel_size, strides, padding, data_format, activation,
                           use_bias, kernel_initializer, bias_initializer, kernel_regularizer,
                           bias_regularizer, activity_regularizer, kernel_constraint,
                           bias_constraint, trainable, name, reuse)(inputs)


class SeparableConv2D(_ConvLayer):
    """A depthwise convolution per input channel, then a 1x1 convolution mixing them."""

    _default_name = "separable_conv2d"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str = "channels_last",
                 dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                 activation: Callable | None = None, use_bias: bool = True,
                 depthwise_initializer: Any = None, pointwise_initializer: Any = None,
                 bias_initializer: Any = None, depthwise_regularizer: Any = None,
                 pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, depthwise_constraint: Any = None,
                 pointwise_constraint: Any = None, bias_constraint: Any = None,
                 trainable: bool = True, name: str | None = None, reuse: Any = None,
                 **unused: Any) -> None:
        refuse_unsupported("SeparableConv2D", activity_regularizer=activity_regularizer,
                           depthwise_constraint=depthwise_constraint,
                           pointwise_constraint=pointwise_constraint,
                           bias_constraint=bias_constraint)
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         activation, use_bias, bias_initializer, trainable, name, reuse)
        self.depth_multiplier = int(depth_multiplier)
        self.initializers = (depthwise_initializer, pointwise_initializer)
        self.regularizers = (depthwise_regularizer, pointwise_regularizer, bias_regularizer)
        self.depthwise_kernel: Any = None
        self.pointwise_kernel: Any = None

    @property
    def variables(self) -> list:
        return [v for v in (self.depthwise_kernel, self.pointwise_kernel, self.bias)
                if v is not None]

    weights = variables

    def __call__(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        depth = channels(x, self.data_format)
        with self._open_scope():
            self.depthwise_kernel = self._variable(
                "depthwise_kernel", [*self.kernel_size, depth, self.depth_multiplier],
                self.initializers[0], self.regularizers[0])
            self.pointwise_kernel = self._variable(
                "pointwise_kernel", [1, 1, depth * self.depth_multiplier, self.filters],
                self.initializers[1], self.regularizers[1])
            sh, sw = self.strides
            strides = [1, 1, sh, sw] if self.data_format == "NCHW" else [1, sh, sw, 1]
            out = nn_separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel, strides,
                                      self.padding, rate=list(self.dilation_rate),
                                      data_format=self.data_format)
            return self._finish(out, self.regularizers[2])

    apply = __call__


def separable_conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last",
                     dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                     activation: Callable | None = None, use_bias: bool = True,
                     depthwise_initializer: Any = None, pointwise_initializer: Any = None,
                     bias_initializer: Any = None, depthwise_regularizer: Any = None,
                     pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                     activity_regularizer: Any = None, depthwise_constraint: Any = None,
                     pointwise_constraint: Any = None, bias_constraint: Any = None,
                     trainable: bool = True, name: str | None = None,
                     reuse: Any = None) -> Tensor:
    """Functional ``SeparableConv2D`` in scope ``name`` (default ``separable_conv2d``)."""
    return SeparableConv2D(filters, kernel_size, strides, padding, data_format, dilation_rate,
                           depth_multiplier, activation, use_bias, depthwise_initializer,
                           pointwise_initializer, bias_initializer, depthwise_regularizer,
                           pointwise_regularizer, bias_regularizer, activity_regularizer,
                           depthwise_constraint, pointwise_constraint, bias_constraint,
                           trainable, name, reuse)(inputs)
