"""The cell wrappers of ``tf.nn.rnn_cell``: cells around a cell, with no scope or variables
of their own (the wrapped cell's variables keep TF's names).

- ``DropoutWrapper``: dropout on a cell's inputs, outputs and new state (an LSTM state's
  ``h``, not its ``c``), each with its keep probability.
- ``DeviceWrapper``: the cell (its ops, variables and zero state) built under
  ``tf.device``, so the layers of a ``MultiRNNCell`` can sit on different GPUs.
- ``ResidualWrapper``: the inputs added to the cell's outputs.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tfteach.errors import with_hint
from tfteach.framework.graph import get_default_graph
from tfteach.framework.nest import flatten, pack
from tfteach.i18n import tr
from tfteach.ops import nn_ops
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.rnn_cell_impl import LSTMStateTuple, RNNCell

__all__ = ["DropoutWrapper", "DeviceWrapper", "ResidualWrapper"]


class _Wrapper(RNNCell):
    """A cell around ``cell``: its sizes, variables and zero state."""

    def __init__(self, cell: RNNCell) -> None:
        super().__init__()
        self.cell = cell

    state_size = property(lambda self: self.cell.state_size)
    output_size = property(lambda self: self.cell.output_size)
    variables = property(lambda self: self.cell.variables)
    weights = trainable_variables = trainable_weights = variables

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with get_default_graph().name_scope(type(self).__name__ + "ZeroState"):
            return self.cell.zero_state(batch_size, dtype)


class DeviceWrapper(_Wrapper):
    """``cell`` built and run on ``device`` (model parallelism across GPUs)."""

    def __init__(self, cell: RNNCell, device: Any) -> None:
        super().__init__(cell)
        self._device = device

    def zero_state(self, batch_size: Any, dtype: Any) -> Any:
        with get_default_graph().device(self._device):
            return super().zero_state(batch_size, dtype)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple:
        with get_default_graph().device(self._device):
            return self.cell(inputs, state, scope=scope)


class ResidualWrapper(_Wrapper):
    """``cell``'s outputs plus its inputs (or ``residual_fn(inputs, outputs)``)."""

    def __init__(self, cell: RNNCell, residual_fn: Callable | None = None) -> None:
        super().__init__(cell)
        self._residual_fn = residual_fn

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple:
        output, new_state = self.cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state
        flat_in, flat_out = flatten(inputs), flatten(output)
        if len(flat_in) != len(flat_out):
            raise ValueError("The two structures don't have the same nested structure: "
                             f"inputs {inputs} and outputs {output}")
        return pack(output, [convert_to_tensor(i) + o
                             for i, o in zip(flat_in, flat_out, strict=True)]), new_state


class DropoutWrapper(_Wrapper):
    """Dropout around ``cell``: ``input_keep_prob`` on its inputs, ``output_keep_prob`` on
    its outputs, ``state_keep_prob`` on its new state (an LSTM state's ``h`` only)."""

    def __init__(self, cell: RNNCell, input_keep_prob: Any = 1.0, output_keep_prob: Any = 1.0,
                 state_keep_prob: Any = 1.0, variational_recurrent: bool = False,
                 input_size: Any = None, dtype: Any = None, seed: int | None = None,
                 dropout_state_filter_visitor: Any = None) -> None:
        super().__init__(cell)
        if variational_recurrent:
            raise NotImplementedError(with_hint(
                "tfteach's DropoutWrapper does not support variational_recurrent yet.",
                tr("leave it out, or run this program on real TensorFlow.")))
        for what, p in (("input", input_keep_prob), ("output", output_keep_prob),
                        ("state", state_keep_prob)):
            if isinstance(p, (int, float)) and not 0 < p <= 1:
                raise ValueError(f"Parameter {what}_keep_prob must be between 0 and 1: {p}")
        self._seed = seed
        self._keep = (input_keep_prob, output_keep_prob, state_keep_prob)

    def _dropout(self, values: Any, keep: Any, keep_c: bool = True) -> Any:
        if isinstance(keep, (int, float)) and keep >= 1:
            return values
        if isinstance(values, LSTMStateTuple):
            c = values.c if not keep_c else self._dropout(values.c, keep)
            return LSTMStateTuple(c, self._dropout(values.h, keep))
        if isinstance(values, (list, tuple)):
            return type(values)(self._dropout(v, keep, keep_c) for v in values)
        return nn_ops.dropout(values, keep_prob=keep, seed=self._seed)

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple:
        keep_in, keep_out, keep_state = self._keep
        output, new_state = self.cell(self._dropout(inputs, keep_in), state, scope=scope)
        new_state = self._dropout(new_state, keep_state, keep_c=False)
        return self._dropout(output, keep_out), new_state
