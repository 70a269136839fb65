"""``tf.layers``: the TF 1.x layer functions the lessons use (``dense``, ``flatten``).

``Dense`` owns a variable scope (``dense``, ``dense_1``, ... or its ``name``) holding
``kernel`` [in, units] and ``bias`` [units]; calling the same layer object again reuses its
variables. Ops are named as TF names them: ``dense/MatMul``, ``dense/BiasAdd``,
``dense/Relu``. State: a layer's scope and variables, fixed after its first call.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.ops import array_ops, init_ops, math_ops, nn_ops
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.variable_scope import VariableScope, get_variable, variable_scope


class Dense:
    """A fully connected layer: ``activation(inputs @ kernel + bias)``."""

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

    @contextlib.contextmanager
    def _open_scope(self) -> Iterator[VariableScope]:
        """First call: a new scope. Later calls: the same scope and name scope, reusing."""
        if self._scope is None:
            with variable_scope(self.name, default_name="dense", reuse=self._reuse) as scope:
                self._scope = scope
                yield scope
            return
        g = get_default_graph()
        with variable_scope(self._scope, reuse=True, auxiliary_name_scope=False) as scope, \
                g.name_scope(self._scope.original_name_scope):
            yield scope

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
