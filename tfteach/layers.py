"""``tf.layers``: the TF 1.x layer functions and classes (``dense``, ``conv2d``,
``max_pooling2d``, ``average_pooling2d``, ``dropout``, ``flatten``, ``batch_normalization``;
``conv2d_transpose`` and ``separable_conv2d`` from ``tfteach.ops.conv_layers``, on the
``Layer`` base of ``tfteach.ops.layer_base``).

A layer owns a variable scope (``dense``, ``conv2d_1``, ... or its ``name``) holding its
variables as TF names them (``kernel``, ``bias``; ``gamma``, ``beta``, ``moving_mean``,
``moving_variance``), so checkpoints and ``trainable_variables()`` match TF; calling the same
layer object again reuses its variables. Ops are named as TF names them: ``dense/MatMul``,
``conv2d/Conv2D``, ``conv2d/BiasAdd``, ``conv2d/Relu``, ``max_pooling2d/MaxPool``,
``batch_normalization/FusedBatchNormV3``. State: a layer's scope and variables, fixed after
its first call.

``training=`` (dropout, batch normalization) takes a Python bool, a constant or a bool
tensor fed at run time; as in TF, ``smart_cond`` builds only the branch a known value picks
and a ``tf.cond`` for a tensor.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfteach.errors import missing_attribute, with_hint
from tfteach.framework.graph import GraphKeys, Tensor, get_default_graph
from tfteach.i18n import tr
from tfteach.ops import (array_ops, conv_ops, init_ops, math_ops, nn_ops, normalization_ops,
                         pooling_ops, state_ops)
from tfteach.ops.common import const_value, convert_to_tensor
from tfteach.ops.cond_ops import smart_cond
from tfteach.ops.conv_layers import (Conv2DTranspose, SeparableConv2D,  # noqa: F401 (tf.layers)
                                     conv2d_transpose, separable_conv2d)
from tfteach.ops.layer_base import Layer as _Layer
from tfteach.ops.layer_base import channels as _channels
from tfteach.ops.layer_base import data_format as _format
from tfteach.ops.layer_base import pair as _pair
from tfteach.ops.layer_base import refuse_unsupported as _refuse_unsupported
from tfteach.ops.variable_scope import VariableScope, get_variable


class Dense(_Layer):
    """A fully connected layer: ``activation(inputs @ kernel + bias)``."""

    _default_name = "dense"

    def __init__(self, units: int, activation: Callable | None = None, use_bias: bool = True,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 kernel_regularizer: Callable | None = None,
                 bias_regularizer: Callable | None = None, trainable: bool = True,
                 name: str | None = None, reuse: Any = None, **unused: Any) -> None:
        if int(units) <= 0:
            raise ValueError(f"units must be a positive integer, got {units}.")
        self.units = int(units)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or init_ops.Zeros()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.trainable = trainable
        self.name = name
        self._reuse = reuse
        self._scope: VariableScope | None = None
        self.kernel: Any = None
        self.bias: Any = None

    @property
    def variables(self) -> list:
        return [v for v in (self.kernel, self.bias) if v is not None]

    weights = variables
    trainable_variables = property(lambda self: self.variables if self.trainable else [])

    def _build(self, in_dim: int) -> None:
        self.kernel = get_variable("kernel", [in_dim, self.units],
                                   initializer=self.kernel_initializer,
                                   regularizer=self.kernel_regularizer, trainable=self.trainable)
        if self.use_bias:
            self.bias = get_variable("bias", [self.units], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer,
                                     trainable=self.trainable)

    def __call__(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        in_dim = x.shape.dims[-1] if x.shape.dims else None
        if in_dim is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        with self._open_scope():
            self._build(in_dim)
            out = _matmul_any_rank(x, self.kernel, self.units)
            if self.use_bias:
                out = nn_ops.bias_add(out, self.bias)
            return self.activation(out) if self.activation is not None else out

    apply = __call__


def _matmul_any_rank(x: Tensor, kernel: Any, units: int) -> Tensor:
    """``x @ kernel`` over the last axis of ``x``, whatever its rank."""
    if x.shape.ndims == 2:
        return math_ops.matmul(x, kernel)
    flat = array_ops.reshape(x, [-1, x.shape.dims[-1]])
    out = math_ops.matmul(flat, kernel)
    rank = x.shape.ndims
    lead = array_ops.slice_(array_ops.shape(x), [0], [rank - 1])
    out_shape = array_ops.concat([lead, np.array([units], np.int32)], 0)
    out = array_ops.reshape(out, out_shape)
    out.set_shape(list(x.shape.dims[:-1]) + [units])
    return out


def dense(inputs: Any, units: int, activation: Callable | None = None, use_bias: bool = True,
          kernel_initializer: Any = None, bias_initializer: Any = None,
          kernel_regularizer: Callable | None = None, bias_regularizer: Callable | None = None,
          trainable: bool = True, name: str | None = None, reuse: Any = None,
          **unused: Any) -> Tensor:
    """Functional ``Dense``: ``activation(inputs @ kernel + bias)`` in scope ``name``."""
    layer = Dense(units, activation, use_bias, kernel_initializer, bias_initializer,
                  kernel_regularizer, bias_regularizer, trainable, name, reuse)
    return layer(inputs)


def flatten(inputs: Any, name: str | None = None) -> Tensor:
    """[batch, d1, d2, ...] -> [batch, d1 * d2 * ...]."""
    x = convert_to_tensor(inputs)
    dims = x.shape.dims
    if dims is None or any(d is None for d in dims[1:]):
        raise ValueError(f"flatten needs every dimension but the first known, got {x.shape}.")
    with x.graph.name_scope(name or "flatten"):
        return array_ops.reshape(x, [-1, int(np.prod(dims[1:]))])


# ---- convolution and pooling -----------------------------------------------------------------
class Conv2D(_Layer):
    """A 2-D convolution layer: ``activation(conv2d(inputs, kernel) + bias)``, with
    ``kernel`` [kh, kw, in_channels, filters] and ``bias`` [filters]."""

    _default_name = "conv2d"

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str = "channels_last",
                 dilation_rate: Any = (1, 1), activation: Callable | None = None,
                 use_bias: bool = True, kernel_initializer: Any = None,
                 bias_initializer: Any = None, kernel_regularizer: Callable | None = None,
                 bias_regularizer: Callable | None = None,
                 activity_regularizer: Callable | None = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, trainable: bool = True,
                 name: str | None = None, reuse: Any = None, **unused: Any) -> None:
        _refuse_unsupported("Conv2D", activity_regularizer=activity_regularizer,
                            kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
        self.filters, self.kernel_size = int(filters), _pair(kernel_size)
        self.strides, self.dilation_rate = _pair(strides), _pair(dilation_rate)
        self.padding, self.data_format = padding.upper(), _format(data_format)
        self.activation, self.use_bias = activation, use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or init_ops.Zeros()
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.trainable, self.name, self._reuse = trainable, name, reuse
        self.kernel: Any = None
        self.bias: Any = None

    variables = Dense.variables
    weights = Dense.variables
    trainable_variables = Dense.trainable_variables

    def __call__(self, inputs: Any) -> Tensor:
        x = convert_to_tensor(inputs)
        depth = _channels(x, self.data_format)
        with self._open_scope():
            self.kernel = get_variable("kernel", [*self.kernel_size, depth, self.filters],
                                       initializer=self.kernel_initializer,
                                       regularizer=self.kernel_regularizer,
                                       trainable=self.trainable)
            if self.use_bias:
                self.bias = get_variable("bias", [self.filters],
                                         initializer=self.bias_initializer,
                                         regularizer=self.bias_regularizer,
                                         trainable=self.trainable)
            out = conv_ops.conv2d(x, self.kernel, strides=list(self.strides),
                                  padding=self.padding, data_format=self.data_format,
                                  dilations=list(self.dilation_rate), name="Conv2D")
            if self.use_bias:
                out = nn_ops.bias_add(out, self.bias, data_format=self.data_format)
            return self.activation(out) if self.activation is not None else out

    apply = __call__


def conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
           padding: str = "valid", data_format: str = "channels_last",
           dilation_rate: Any = (1, 1), activation: Callable | None = None,
           use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Callable | None = None, bias_regularizer: Callable | None = None,
           activity_regularizer: Callable | None = None, kernel_constraint: Any = None,
           bias_constraint: Any = None, trainable: bool = True, name: str | None = None,
           reuse: Any = None, **unused: Any) -> Tensor:
    """Functional ``Conv2D`` in scope ``name`` (default ``conv2d``, ``conv2d_1``, ...)."""
    return Conv2D(filters, kernel_size, strides, padding, data_format, dilation_rate,
                  activation, use_bias, kernel_initializer, bias_initializer,
                  kernel_regularizer, bias_regularizer, activity_regularizer, kernel_constraint,
                  bias_constraint, trainable, name, reuse)(inputs)


class _Pooling2D(_Layer):
    _pool: Callable = staticmethod(pooling_ops.max_pool)
    _op_name = "MaxPool"

    def __init__(self, pool_size: Any, strides: Any, padding: str = "valid",
                 data_format: str = "channels_last", name: str | None = None,
                 **unused: Any) -> None:
        self.pool_size, self.strides = _pair(pool_size), _pair(strides)
        self.padding, self.data_format = padding.upper(), _format(data_format)
        self.name = name

    def __call__(self, inputs: Any) -> Tensor:
        with self._open_scope():
            return self._pool(inputs, ksize=list(self.pool_size), strides=list(self.strides),
                              padding=self.padding, data_format=self.data_format,
                              name=self._op_name)

    apply = __call__


class MaxPooling2D(_Pooling2D):
    """The maximum of each ``pool_size`` window (op ``max_pooling2d/MaxPool``)."""

    _default_name = "max_pooling2d"


class AveragePooling2D(_Pooling2D):
    """The mean of each ``pool_size`` window (op ``average_pooling2d/AvgPool``)."""

    _default_name = "average_pooling2d"
    _pool = staticmethod(pooling_ops.avg_pool)
    _op_name = "AvgPool"


def max_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Tensor:
    return MaxPooling2D(pool_size, strides, padding, data_format, name)(inputs)


def average_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Tensor:
    return AveragePooling2D(pool_size, strides, padding, data_format, name)(inputs)


# ---- dropout and batch normalization (training=) ------------------------------------------------
def _training_flag(training: Any) -> Any:
    """``training`` as a Python bool when it is known while building (a bool, a constant),
    else the bool tensor itself: the layer then chooses at run time (``smart_cond``)."""
    if isinstance(training, (bool, np.bool_)) or training is None:
        return bool(training)
    value = const_value(training) if isinstance(training, Tensor) else training
    if value is None:
        return training
    return bool(value)


class Dropout(_Layer):
    """In training, ``tf.nn.dropout`` with ``rate``; otherwise the identity."""

    _default_name = "dropout"

    def __init__(self, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
                 name: str | None = None, **unused: Any) -> None:
        self.rate, self.noise_shape, self.seed, self.name = rate, noise_shape, seed, name

    def __call__(self, inputs: Any, training: Any = False) -> Tensor:
        train = _training_flag(training)
        with self._open_scope():
            return smart_cond(train, lambda: nn_ops.dropout(
                inputs, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed),
                lambda: array_ops.identity(inputs))

    apply = __call__


def dropout(inputs: Any, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
            training: Any = False, name: str | None = None) -> Tensor:
    return Dropout(rate, noise_shape, seed, name)(inputs, training=training)


class BatchNormalization(_Layer):
    """Batch normalisation over the last (or ``axis``) channel: ``gamma`` and ``beta`` are
    trained; ``moving_mean`` and ``moving_variance`` are not, and are updated by the ops this
    layer puts in ``tf.GraphKeys.UPDATE_OPS`` when called with ``training=True``. 4-D inputs
    use ``FusedBatchNormV3`` as TF does; others the unfused ``moments`` form."""

    _default_name = "batch_normalization"

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = None,
                 gamma_initializer: Any = None, moving_mean_initializer: Any = None,
                 moving_variance_initializer: Any = None,
                 beta_regularizer: Callable | None = None,
                 gamma_regularizer: Callable | None = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, renorm: bool = False,
                 renorm_clipping: Any = None, renorm_momentum: float = 0.99,
                 fused: bool | None = None, trainable: bool = True,
                 virtual_batch_size: int | None = None, adjustment: Any = None,
                 name: str | None = None, reuse: Any = None, **unused: Any) -> None:
        _refuse_unsupported("BatchNormalization", beta_constraint=beta_constraint,
                            gamma_constraint=gamma_constraint, renorm=renorm or None,
                            virtual_batch_size=virtual_batch_size, adjustment=adjustment)
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale, self.fused = center, scale, fused
        self.initializers = {"gamma": gamma_initializer or init_ops.Ones(),
                             "beta": beta_initializer or init_ops.Zeros(),
                             "moving_mean": moving_mean_initializer or init_ops.Zeros(),
                             "moving_variance": moving_variance_initializer or init_ops.Ones()}
        self.regularizers = {"gamma": gamma_regularizer, "beta": beta_regularizer}
        self.trainable, self.name, self._reuse = trainable, name, reuse
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None

    @property
    def variables(self) -> list:
        return [v for v in (self.gamma, self.beta, self.moving_mean, self.moving_variance)
                if v is not None]

    weights = variables
    trainable_variables = property(
        lambda self: [v for v in (self.gamma, self.beta) if v is not None and self.trainable])

    def _variable(self, name: str, depth: int, trainable: bool) -> Any:
        return get_variable(name, [depth], initializer=self.initializers[name],
                            regularizer=self.regularizers.get(name), trainable=trainable)

    def _build(self, depth: int) -> None:
        if self.scale:
            self.gamma = self._variable("gamma", depth, self.trainable)
        if self.center:
            self.beta = self._variable("beta", depth, self.trainable)
        self.moving_mean = self._variable("moving_mean", depth, False)
        self.moving_variance = self._variable("moving_variance", depth, False)

    def _axis(self, x: Tensor) -> tuple[int, int]:
        rank = x.shape.ndims
        if rank is None:
            raise ValueError("Input has undefined rank.")
        axis = self.axis % rank
        if x.shape.dims[axis] is None:
            raise ValueError(f"Input has undefined `axis` dimension. Received input with "
                             f"shape {x.shape}. Axis value: {self.axis}")
        if not (rank == 4 and axis in (1, 3)) and axis != rank - 1:
            raise NotImplementedError(with_hint(
                f"batch_normalization over axis {self.axis} of a rank-{rank} input.",
                tr("tfteach normalises the last axis, or axis 1 or 3 of a 4-D input.")))
        return axis, x.shape.dims[axis]

    def __call__(self, inputs: Any, training: Any = False) -> Tensor:
        train = _training_flag(training)
        x = convert_to_tensor(inputs)
        axis, depth = self._axis(x)
        with self._open_scope():
            self._build(depth)
            gamma = self.gamma if self.scale else array_ops.ones([depth], x.dtype, name="Const")
            beta = self.beta if self.center else array_ops.zeros([depth], x.dtype, name="Const")
            fused = x.shape.ndims == 4 and self.fused is not False
            if fused:
                fmt = "NCHW" if axis == 1 else "NHWC"
                y, mean, variance = smart_cond(train, *(
                    lambda t=t: normalization_ops.fused_batch_norm(
                        x, gamma, beta, self.moving_mean, self.moving_variance, self.epsilon,
                        fmt, is_training=t) for t in (True, False)))
            else:
                y, mean, variance = self._unfused(x, gamma, beta, axis, train)
            if train is not False:
                self._add_updates(mean, variance, fused, train)
            return y

    apply = __call__

    def _unfused(self, x: Tensor, gamma: Any, beta: Any, axis: int, train: Any) -> tuple:
        axes = [i for i in range(x.shape.ndims) if i != axis]
        if train is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            mean, variance = normalization_ops.moments(x, axes)
            if train is not True:
                mean, variance = smart_cond(train, lambda: (mean, variance), lambda: (
                    convert_to_tensor(self.moving_mean), convert_to_tensor(self.moving_variance)))
        y = normalization_ops.batch_normalization(x, mean, variance, beta, gamma, self.epsilon)
        return y, mean, variance

    def _add_updates(self, mean: Tensor, variance: Tensor, fused: bool, train: Any) -> None:
        """TF's ``_assign_moving_average``: ``moving -= (moving - batch) * (1 - momentum)``
        (the fused form takes the momentum as a tensor, the unfused one a constant decay).
        With a ``training`` tensor the fused momentum is ``1.0`` when not training, and the
        unfused batch statistics are the moving ones, so nothing moves (as TF)."""
        g = get_default_graph()
        momentum = None
        if fused:
            momentum = smart_cond(train, lambda: convert_to_tensor(self.momentum, mean.dtype),
                                  lambda: convert_to_tensor(1.0, mean.dtype))
        for var, value in ((self.moving_mean, mean), (self.moving_variance, variance)):
            with g.name_scope("AssignMovingAvg") as scope, g.colocate_with(var.op):
                decay = 1.0 - momentum if fused else \
                    convert_to_tensor(1.0 - self.momentum, dtype=mean.dtype, name="decay")
                delta = (convert_to_tensor(var) - value) * decay
                update = state_ops.assign_sub(var, delta, name=scope)
            g.add_to_collection(GraphKeys.UPDATE_OPS, update.op)


def batch_normalization(inputs: Any, axis: int = -1, momentum: float = 0.99,
                        epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                        beta_initializer: Any = None, gamma_initializer: Any = None,
                        moving_mean_initializer: Any = None,
                        moving_variance_initializer: Any = None,
                        beta_regularizer: Callable | None = None,
                        gamma_regularizer: Callable | None = None, beta_constraint: Any = None,
                        gamma_constraint: Any = None, training: Any = False,
                        trainable: bool = True, name: str | None = None, reuse: Any = None,
                        renorm: bool = False, renorm_clipping: Any = None,
                        renorm_momentum: float = 0.99, fused: bool | None = None,
                        virtual_batch_size: int | None = None, adjustment: Any = None,
                        **unused: Any) -> Tensor:
    """Functional ``BatchNormalization``; run ``tf.GraphKeys.UPDATE_OPS`` with the train op
    (``tf.control_dependencies``) to update the moving mean and variance."""
    layer = BatchNormalization(axis, momentum, epsilon, center, scale, beta_initializer,
                               gamma_initializer, moving_mean_initializer,
                               moving_variance_initializer, beta_regularizer, gamma_regularizer,
                               beta_constraint, gamma_constraint, renorm, renorm_clipping,
                               renorm_momentum, fused, trainable, virtual_batch_size, adjustment,
                               name, reuse)
    return layer(inputs, training=training)


def __getattr__(name: str):
    """A name tf.layers has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.layers", f"tf.layers.{name}", name)
