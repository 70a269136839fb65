"""``tf.nn.static_rnn`` and ``tf.nn.dynamic_rnn``, built as TF 1.x builds them.

- ``static_rnn(cell, inputs)``: the cell called once per element of the Python list
  ``inputs`` in variable scope ``rnn`` (reused after the first step): one copy of the
  cell's ops per time step.
- ``dynamic_rnn(cell, inputs)``: inputs [batch, time, depth] (``time_major``: [time, batch,
  depth]) transposed to time-major, unstacked into a TensorArray; a ``tf.while_loop``
  (``rnn/while``) calls the cell once per step and writes each output into a TensorArray,
  stacked and transposed back after the loop. The cell's variables are made once, outside
  the loop (``rnn/basic_lstm_cell/kernel``).

- ``bidirectional_dynamic_rnn(cell_fw, cell_bw, inputs)``: ``dynamic_rnn`` forwards in scope
  ``bidirectional_rnn/fw`` and over the reversed sequences (``ReverseSequence`` with
  ``sequence_length``, else ``ReverseV2``) in ``bidirectional_rnn/bw``, its outputs
  reversed back; ``static_bidirectional_rnn`` the same over a list, its outputs the two
  directions concatenated.

``sequence_length`` ([batch]): past its length a sequence's output is zeros and its state is
copied through unchanged (TF's ``_rnn_step``, with ``tf.where`` per row).
"""
from __future__ import annotations

from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.nest import flatten, pack
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.reverse_ops import reverse
from tfteach.ops.reverse_sequence_ops import reverse_sequence
from tfteach.ops.tensor_array import TensorArray
from tfteach.ops.variable_scope import variable_scope
from tfteach.ops.while_ops import while_loop

__all__ = ["static_rnn", "dynamic_rnn", "bidirectional_dynamic_rnn", "static_bidirectional_rnn"]


def _initial_state(cell: Any, initial_state: Any, batch_size: Any, dtype: Any) -> Any:
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError(with_hint(
            "If there is no initial_state, you must give a dtype.",
            tr("pass dtype=tf.float32 (the state starts at zeros), or an initial_state.")))
    return cell.zero_state(batch_size, dtype)


def _copy_through(done: Tensor, old: Any, new: Any) -> Any:
    """Per row: ``old`` where the sequence is done, else ``new`` (TF's ``_rnn_step``)."""
    flat_old, flat_new = flatten(old), flatten(new)
    return pack(new, [n if o.shape.rank == 0 else math_ops.where(done, o, n)
                      for o, n in zip(flat_old, flat_new, strict=True)])


def _lengths(sequence_length: Any) -> Tensor | None:
    if sequence_length is None:
        return None
    lengths = array_ops.cast(sequence_length, dtypes.int32)
    if lengths.shape.rank not in (None, 1):
        raise ValueError("sequence_length must be a vector of length batch_size, but saw "
                         f"shape: {lengths.shape}")
    return array_ops.identity(lengths, name="sequence_length")


def _zero_output(cell: Any, batch_size: Any, dtype: Any) -> Any:
    sizes = cell.output_size
    return pack(sizes, [_zeros(batch_size, s, dtype) for s in flatten(sizes)])


def _zeros(batch_size: Any, size: int, dtype: Any) -> Tensor:
    out = array_ops.zeros(array_ops.stack([batch_size, int(size)]), dtype=dtype)
    out.set_shape([batch_size if isinstance(batch_size, int) else None, int(size)])
    return out


def static_rnn(cell: Any, inputs: Any, initial_state: Any = None, dtype: Any = None,
               sequence_length: Any = None, scope: Any = None) -> tuple:
    """``(outputs, state)``: the cell unrolled over the list ``inputs`` ([batch, depth]
    each)."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "rnn") as varscope:
        first = convert_to_tensor(flatten(inputs[0])[0])
        if first.shape.rank is not None and any(d is None for d in first.shape.dims[1:]):
            raise ValueError("Input size (dimension 1 of inputs) must be accessible via shape "
                             "inference, but saw value None.")
        static = first.shape.dims[0] if first.shape.rank else None
        batch_size = static if static is not None else array_ops.shape(first)[0]
        state = _initial_state(cell, initial_state, batch_size, dtype)
        lengths = _lengths(sequence_length)
        if lengths is not None:
            zero = _zero_output(cell, batch_size, dtype or flatten(state)[0].dtype)
        outputs = []
        for time, x in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(x, state)
            if lengths is not None:
                done = time >= lengths
                output = _copy_through(done, zero, output)
                new_state = _copy_through(done, state, new_state)
            outputs.append(output)
            state = new_state
        return outputs, state


def _batch_major_to_time_major(x: Tensor) -> Tensor:
    """TF's ``_transpose_batch_time``: swap the first two axes, keeping the static shape."""
    rank = x.shape.rank
    if rank is not None and rank < 2:
        raise ValueError(f"Expected input tensor {x} to have rank at least 2")
    perm = [1, 0] + list(range(2, rank)) if rank is not None else None
    out = array_ops.transpose(x, perm)
    if rank is not None:
        dims = list(x.shape.dims)
        out.set_shape([dims[1], dims[0]] + dims[2:])
    return out


def dynamic_rnn(cell: Any, inputs: Any, sequence_length: Any = None, initial_state: Any = None,
                dtype: Any = None, parallel_iterations: int | None = None,
                swap_memory: bool = False, time_major: bool = False,
                scope: Any = None) -> tuple:
    """``(outputs, state)``: the cell run over the time axis of ``inputs`` in a while
    loop; outputs [batch, time, output_size] (``time_major``: [time, batch, ...])."""
    with variable_scope(scope or "rnn"):
        flat = [convert_to_tensor(x) for x in flatten(inputs)]
        if not time_major:
            flat = [_batch_major_to_time_major(x) for x in flat]
        lengths = _lengths(sequence_length)
        static = flat[0].shape.dims[1] if flat[0].shape.rank else None
        batch_size = static if static is not None else array_ops.shape(flat[0])[1]
        state = _initial_state(cell, initial_state, batch_size, dtype)
        outputs, state = _loop(cell, pack(inputs, flat), state, lengths, batch_size,
                               dtype or flatten(state)[0].dtype, parallel_iterations or 32,
                               swap_memory)
        if not time_major:
            outputs = pack(outputs, [_batch_major_to_time_major(o) for o in flatten(outputs)])
        return outputs, state


def _loop(cell: Any, inputs: Any, state: Any, lengths: Tensor | None, batch_size: Any,
          dtype: Any, parallel_iterations: int, swap_memory: bool) -> tuple:
    """TF's ``_dynamic_rnn_loop`` over time-major ``inputs``."""
    flat = flatten(inputs)
    for x in flat:
        if x.shape.rank is not None and (x.shape.rank < 3 or
                                         any(d is None for d in x.shape.dims[2:])):
            raise ValueError("Input size (depth of inputs) must be accessible via shape "
                             "inference, but saw value None.")
    time_steps = array_ops.shape(flat[0])[0]
    const_time, const_batch = (flat[0].shape.dims[:2] if flat[0].shape.rank else (None, None))
    out_sizes = flatten(cell.output_size)
    zero = _zero_output(cell, batch_size, dtype) if lengths is not None else None
    time = array_ops.constant(0, dtype=dtypes.int32, name="time")
    output_ta = tuple(TensorArray(dtype, size=time_steps,
                                  element_shape=TensorShape([const_batch, int(s)]),
                                  tensor_array_name=f"rnn/dynamic_rnn/output_{k}")
                      for k, s in enumerate(out_sizes))
    input_ta = tuple(TensorArray(x.dtype, size=time_steps, element_shape=TensorShape(list(x.shape.dims[1:])),
                                 tensor_array_name=f"rnn/dynamic_rnn/input_{k}").unstack(x)
                     for k, x in enumerate(flat))

    def step(t: Tensor, out_ta: tuple, state: Any) -> tuple:
        x_t = []
        for ta, x in zip(input_ta, flat, strict=True):
            read = ta.read(t)
            read.set_shape(TensorShape(list(x.shape.dims[1:])))
            x_t.append(read)
        output, new_state = cell(pack(inputs, x_t), state)
        if lengths is not None:
            done = t >= lengths
            output = _copy_through(done, zero, output)
            new_state = _copy_through(done, state, new_state)
        out_ta = tuple(ta.write(t, o) for ta, o in zip(out_ta, flatten(output), strict=True))
        return t + 1, out_ta, new_state

    _, final_ta, final_state = while_loop(
        lambda t, *_: t < time_steps, step, (time, output_ta, state),
        parallel_iterations=parallel_iterations, swap_memory=swap_memory,
        maximum_iterations=time_steps)
    outs = []
    for ta, size in zip(final_ta, out_sizes, strict=True):
        o = ta.stack()
        o.set_shape([const_time, const_batch, int(size)])
        outs.append(o)
    return pack(cell.output_size, outs), final_state


def bidirectional_dynamic_rnn(cell_fw: Any, cell_bw: Any, inputs: Any,
                              sequence_length: Any = None, initial_state_fw: Any = None,
                              initial_state_bw: Any = None, dtype: Any = None,
                              parallel_iterations: int | None = None, swap_memory: bool = False,
                              time_major: bool = False, scope: Any = None) -> tuple:
    """``((output_fw, output_bw), (state_fw, state_bw))``: one ``dynamic_rnn`` forwards,
    one over the reversed sequences (its outputs reversed back into input order)."""
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)

    def backwards(x: Any) -> Any:
        if sequence_length is None:
            return reverse(x, [time_axis])
        return reverse_sequence(x, sequence_length, seq_axis=time_axis, batch_axis=batch_axis)

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = dynamic_rnn(cell_fw, inputs, sequence_length, initial_state_fw,
                                           dtype, parallel_iterations, swap_memory, time_major,
                                           scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_inputs = pack(inputs, [backwards(x) for x in flatten(inputs)])
            out_bw, state_bw = dynamic_rnn(cell_bw, reversed_inputs, sequence_length,
                                           initial_state_bw, dtype, parallel_iterations,
                                           swap_memory, time_major, scope=bw_scope)
    out_bw = pack(out_bw, [backwards(o) for o in flatten(out_bw)])
    return (out_fw, out_bw), (state_fw, state_bw)


def _reverse_steps(steps: list, lengths: Any) -> list:
    """TF's ``_reverse_seq``: the list of time steps reversed (per sequence, up to its
    length, with ``lengths``)."""
    if lengths is None:
        return list(reversed(steps))
    flat = [flatten(step) for step in steps]
    out: list = [[] for _ in steps]
    for k in range(len(flat[0])):
        seq = array_ops.stack([f[k] for f in flat])
        rev = array_ops.unstack(reverse_sequence(seq, array_ops.cast(lengths, dtypes.int64),
                                                 seq_axis=0, batch_axis=1))
        for t, r in enumerate(rev):
            r.set_shape(flat[t][k].shape)
            out[t].append(r)
    return [pack(step, o) for step, o in zip(steps, out, strict=True)]


def static_bidirectional_rnn(cell_fw: Any, cell_bw: Any, inputs: Any,
                             initial_state_fw: Any = None, initial_state_bw: Any = None,
                             dtype: Any = None, sequence_length: Any = None,
                             scope: Any = None) -> tuple:
    """``(outputs, state_fw, state_bw)``: ``static_rnn`` forwards and over the reversed
    list; each output is the forward and backward outputs concatenated."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a list")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            out_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                          sequence_length, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            out_bw, state_bw = static_rnn(cell_bw, _reverse_steps(inputs, sequence_length),
                                          initial_state_bw, dtype, sequence_length,
                                          scope=bw_scope)
    out_bw = _reverse_steps(out_bw, sequence_length)
    outputs = [pack(f, [array_ops.concat([a, b], 1)
                        for a, b in zip(flatten(f), flatten(b_), strict=True)])
               for f, b_ in zip(out_fw, out_bw, strict=True)]
    return outputs, state_fw, state_bw
