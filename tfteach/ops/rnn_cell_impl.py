"""``tf.nn.rnn_cell``: TF 1.x's recurrent cells, with TF's variables, formulas and op names.

A cell is a ``Layer``: its first call opens a variable scope under the current one
(``rnn/basic_lstm_cell``) and makes its variables there; later calls (the next time step of
``static_rnn``, the loop body of ``dynamic_rnn``) reuse them, so checkpoints name them as
TF does:

- ``BasicRNNCell``: ``kernel`` [in + units, units], ``bias``; ``h = tanh([x, h] W + b)``.
- ``BasicLSTMCell``: ``kernel`` [in + units, 4 units], ``bias``; gates ``i, j, f, o`` in
  that order, ``c = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j)``,
  ``h = tanh(c) * sigmoid(o)``; state ``LSTMStateTuple(c, h)``.
- ``LSTMCell``: the same, plus peepholes (``w_f_diag``, ``w_i_diag``, ``w_o_diag``), a cell
  clip and a projection (``projection/kernel``).
- ``GRUCell``: ``gates/kernel``, ``gates/bias`` (ones), ``candidate/kernel``,
  ``candidate/bias``; ``h = u * h + (1 - u) * tanh([x, r * h] Wc + bc)``.
- ``MultiRNNCell``: cells stacked in scopes ``cell_0``, ``cell_1``, ...

The wrappers (dropout, device, residual) are in ``rnn_cell_wrappers``; ``tf.nn.rnn_cell``
is ``rnn_cell_namespace``.

``zero_state(batch_size, dtype)`` gives zeros of ``state_size`` under
``<Cell>ZeroState/``.
"""
from __future__ import annotations

import collections
import re
from collections.abc import Callable
from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.nest import flatten, pack
from tfteach.ops import array_ops, init_ops, math_ops, nn_ops
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.layer_base import Layer, outside_control_flow
from tfteach.ops.variable_scope import get_variable, variable_scope

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "MultiRNNCell",
           "LSTMStateTuple"]


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the cell ``c`` and the output ``h``."""

    __slots__ = ()

    @property
    def dtype(self) -> dtypes.DType:
        c, h = self
        if c.dtype != h.dtype:
            raise TypeError(f"Inconsistent internal state: {c.dtype} vs {h.dtype}")
        return c.dtype


def _zeros(batch_size: Any, size: Any, dtype: Any) -> Any:
    if isinstance(size, (list, tuple)):
        return pack(size, [_zeros(batch_size, s, dtype) for s in flatten(size)])
    static = batch_size if isinstance(batch_size, int) else None
    if static is not None:
        return array_ops.zeros([static, int(size)], dtype=dtype)
    shape = array_ops.stack([batch_size, int(size)])
    out = array_ops.zeros(shape, dtype=dtype)
    out.set_shape([None, int(size)])
    return out


def _snake_case(name: str) -> str:
    """TF's ``to_snake_case``: a layer's default name from its class name."""
    words = re.sub("([a-z])([A-Z])", r"\1_\2", re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name))
    lower = words.lower()
    return lower if lower[0] != "_" else "private" + lower


class RNNCell(Layer):
    """The cell interface: ``output, new_state = cell(inputs, state)``. A learner's cell
    subclasses it with ``state_size``, ``output_size``, ``build(inputs_shape)`` (making
    variables with ``add_variable``) and ``call(inputs, state)``; its scope is its class
    name in snake case, as TF names it."""

    _default_name = "rnn_cell"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_default_name" not in cls.__dict__:
            cls._default_name = _snake_case(cls.__name__)

    def __init__(self, reuse: Any = None, name: str | None = None, dtype: Any = None) -> None:
        self._reuse, self.name = reuse, name
        self._dtype = dtypes.as_dtype(dtype) if dtype is not None else None
        self._variables: list = []
        self.built = False

    @property
    def state_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_size(self) -> Any:
        raise NotImplementedError

    @property
    def variables(self) -> list:
        return list(self._variables)

    weights = trainable_variables = trainable_weights = variables

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        """Zeros shaped as ``state_size``, ``[batch_size, size]`` each."""
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return _zeros(batch_size, self.state_size, dtypes.as_dtype(dtype))

    def get_initial_state(self, inputs: Any = None, batch_size: Any = None,
                          dtype: Any = None) -> Any:
        return self.zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple:
        x = convert_to_tensor(inputs)
        if scope is not None:
            with variable_scope(scope):
                return self._call_in_scope(x, state)
        return self._call_in_scope(x, state)

    def _call_in_scope(self, x: Tensor, state: Any) -> tuple:
        with self._open_scope():
            if not self.built:
                self._dtype = self._dtype or x.dtype
                self.build(x.shape)
                self.built = True
            return self.call(x, state)

    @property
    def dtype(self) -> Any:
        return self._dtype

    def add_variable(self, name: str, shape: Any, dtype: Any = None, initializer: Any = None,
                     trainable: bool = True, **unused: Any) -> Any:
        """A variable in the cell's scope, made outside any loop the cell is called in."""
        with outside_control_flow():
            v = get_variable(name, shape, dtype=dtype or self._dtype, initializer=initializer,
                             trainable=trainable)
        self._variables.append(v)
        return v

    add_weight = add_variable

    def build(self, inputs_shape: Any) -> None:
        """Make the cell's variables (once, on the first call)."""

    def call(self, inputs: Tensor, state: Any) -> tuple:
        raise NotImplementedError


def _depth(inputs_shape: Any) -> int:
    dims = inputs_shape.dims if inputs_shape.rank else None
    if not dims or dims[-1] is None:
        raise ValueError(f"Expected inputs.shape[-1] to be known, saw shape: {inputs_shape}")
    return int(dims[-1])


def _zeros_init() -> Any:
    return init_ops.Zeros()


class BasicRNNCell(RNNCell):
    """The most basic RNN cell: ``h = activation([x, h] W + b)``."""

    _default_name = "basic_rnn_cell"

    def __init__(self, num_units: int, activation: Callable | None = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **unused: Any) -> None:
        super().__init__(reuse, name, dtype)
        self._num_units, self._activation = int(num_units), activation or nn_ops.tanh

    state_size = output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: Any) -> None:
        depth = _depth(inputs_shape)
        self._kernel = self.add_variable("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_variable("bias", [self._num_units], initializer=_zeros_init())

    def call(self, x: Tensor, state: Any) -> tuple:
        gates = math_ops.matmul(array_ops.concat([x, state], 1), self._kernel)
        out = self._activation(nn_ops.bias_add(gates, self._bias))
        return out, out


class BasicLSTMCell(RNNCell):
    """TF's basic LSTM cell (no peepholes, no clipping, no projection)."""

    _default_name = "basic_lstm_cell"

    def __init__(self, num_units: int, forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Callable | None = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **unused: Any) -> None:
        super().__init__(reuse, name, dtype)
        self._num_units, self._forget_bias = int(num_units), forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = activation or nn_ops.tanh

    @property
    def state_size(self) -> Any:
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: Any) -> None:
        depth = _depth(inputs_shape)
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n], initializer=_zeros_init())

    def call(self, x: Tensor, state: Any) -> tuple:
        one = array_ops.constant(1, dtype=dtypes.int32)
        c, h = state if self._state_is_tuple else array_ops.split(state, 2, axis=one)
        gates = math_ops.matmul(array_ops.concat([x, h], 1), self._kernel)
        gates = nn_ops.bias_add(gates, self._bias)
        i, j, f, o = array_ops.split(gates, 4, axis=one)
        forget = array_ops.constant(self._forget_bias, dtype=f.dtype)
        sig = nn_ops.sigmoid
        new_c = math_ops.add(math_ops.multiply(c, sig(math_ops.add(f, forget))),
                             math_ops.multiply(sig(i), self._activation(j)))
        new_h = math_ops.multiply(self._activation(new_c), sig(o))
        state = LSTMStateTuple(new_c, new_h) if self._state_is_tuple else \
            array_ops.concat([new_c, new_h], 1)
        return new_h, state


class LSTMCell(RNNCell):
    """TF's LSTM cell with optional peepholes, cell clipping and an output projection."""

    _default_name = "lstm_cell"

    def __init__(self, num_units: int, use_peepholes: bool = False, cell_clip: Any = None,
                 initializer: Any = None, num_proj: int | None = None, proj_clip: Any = None,
                 num_unit_shards: Any = None, num_proj_shards: Any = None,
                 forget_bias: float = 1.0, state_is_tuple: bool = True,
                 activation: Callable | None = None, reuse: Any = None,
                 name: str | None = None, dtype: Any = None, **unused: Any) -> None:
        super().__init__(reuse, name, dtype)
        self._num_units, self._use_peepholes = int(num_units), use_peepholes
        self._cell_clip, self._initializer = cell_clip, initializer
        self._num_proj, self._proj_clip = num_proj, proj_clip
        self._forget_bias, self._state_is_tuple = forget_bias, state_is_tuple
        self._activation = activation or nn_ops.tanh

    @property
    def state_size(self) -> Any:
        n, p = self._num_units, self._num_proj or self._num_units
        return LSTMStateTuple(n, p) if self._state_is_tuple else n + p

    output_size = property(lambda self: self._num_proj or self._num_units)

    def build(self, inputs_shape: Any) -> None:
        depth = _depth(inputs_shape)
        n, h = self._num_units, self._num_proj or self._num_units
        self._kernel = self.add_variable("kernel", [depth + h, 4 * n],
                                         initializer=self._initializer)
        self._bias = self.add_variable("bias", [4 * n], initializer=_zeros_init())
        if self._use_peepholes:
            self._peep = [self.add_variable(f"w_{g}_diag", [n], initializer=self._initializer)
                          for g in "fio"]
        if self._num_proj is not None:
            self._proj = self.add_variable("projection/kernel", [n, self._num_proj],
                                            initializer=self._initializer)

    def call(self, x: Tensor, state: Any) -> tuple:
        n, p = self._num_units, self._num_proj or self._num_units
        if self._state_is_tuple:
            c_prev, m_prev = state
        else:
            c_prev = array_ops.slice_(state, [0, 0], [-1, n])
            m_prev = array_ops.slice_(state, [0, n], [-1, p])
        gates = nn_ops.bias_add(
            math_ops.matmul(array_ops.concat([x, m_prev], 1), self._kernel), self._bias)
        i, j, f, o = array_ops.split(gates, 4, axis=1)
        c = self._cell(c_prev, i, j, f)
        sig = nn_ops.sigmoid
        o_in = o + self._peep[2] * c if self._use_peepholes else o
        m = sig(o_in) * self._activation(c)
        if self._num_proj is not None:
            m = math_ops.matmul(m, self._proj)
            if self._proj_clip is not None:
                m = math_ops.clip_by_value(m, -self._proj_clip, self._proj_clip)
        state = LSTMStateTuple(c, m) if self._state_is_tuple else array_ops.concat([c, m], 1)
        return m, state

    def _cell(self, c_prev: Tensor, i: Tensor, j: Tensor, f: Tensor) -> Tensor:
        sig = nn_ops.sigmoid
        if self._use_peepholes:
            w_f, w_i, _ = self._peep
            c = sig(f + self._forget_bias + w_f * c_prev) * c_prev + \
                sig(i + w_i * c_prev) * self._activation(j)
        else:
            c = sig(f + self._forget_bias) * c_prev + sig(i) * self._activation(j)
        if self._cell_clip is not None:
            c = math_ops.clip_by_value(c, -self._cell_clip, self._cell_clip)
        return c


class GRUCell(RNNCell):
    """TF's gated recurrent unit cell."""

    _default_name = "gru_cell"

    def __init__(self, num_units: int, activation: Callable | None = None, reuse: Any = None,
                 kernel_initializer: Any = None, bias_initializer: Any = None,
                 name: str | None = None, dtype: Any = None, **unused: Any) -> None:
        super().__init__(reuse, name, dtype)
        self._num_units, self._activation = int(num_units), activation or nn_ops.tanh
        self._kernel_init, self._bias_init = kernel_initializer, bias_initializer

    state_size = output_size = property(lambda self: self._num_units)

    def build(self, inputs_shape: Any) -> None:
        depth = _depth(inputs_shape)
        n, k = self._num_units, self._kernel_init
        self._gate_kernel = self.add_variable("gates/kernel", [depth + n, 2 * n], initializer=k)
        self._gate_bias = self.add_variable(
            "gates/bias", [2 * n], initializer=self._bias_init or init_ops.constant_initializer(1.0))
        self._cand_kernel = self.add_variable("candidate/kernel", [depth + n, n], initializer=k)
        self._cand_bias = self.add_variable("candidate/bias", [n],
                                            initializer=self._bias_init or _zeros_init())

    def call(self, x: Tensor, state: Any) -> tuple:
        gates = nn_ops.bias_add(
            math_ops.matmul(array_ops.concat([x, state], 1), self._gate_kernel), self._gate_bias)
        r, u = array_ops.split(nn_ops.sigmoid(gates), 2, axis=1)
        cand = nn_ops.bias_add(
            math_ops.matmul(array_ops.concat([x, r * state], 1), self._cand_kernel),
            self._cand_bias)
        new_h = u * state + (1 - u) * self._activation(cand)
        return new_h, new_h


class MultiRNNCell(RNNCell):
    """Cells stacked: each one's output is the next one's input."""

    _default_name = "multi_rnn_cell"

    def __init__(self, cells: list, state_is_tuple: bool = True) -> None:
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        self._cells, self._state_is_tuple = list(cells), state_is_tuple

    @property
    def state_size(self) -> Any:
        sizes = tuple(c.state_size for c in self._cells)
        return sizes if self._state_is_tuple else sum(sizes)

    output_size = property(lambda self: self._cells[-1].output_size)

    @property
    def variables(self) -> list:
        return [v for c in self._cells for v in c.variables]

    weights = trainable_variables = trainable_weights = variables

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            if self._state_is_tuple:
                return tuple(c.zero_state(batch_size, dtype) for c in self._cells)
            return _zeros(batch_size, self.state_size, dtypes.as_dtype(dtype))

    def _call_in_scope(self, x: Tensor, state: Any) -> tuple:
        with self._open_scope():
            out, states, pos = x, [], 0
            for k, cell in enumerate(self._cells):
                with variable_scope(f"cell_{k}"):
                    if self._state_is_tuple:
                        s = state[k]
                    else:
                        s = array_ops.slice_(state, [0, pos], [-1, cell.state_size])
                        pos += cell.state_size
                    out, new = cell(out, s)
                    states.append(new)
            return out, (tuple(states) if self._state_is_tuple else
                         array_ops.concat(states, 1))
