"""``tf.reverse_sequence`` (ReverseSequence): per batch entry ``b``, the first
``seq_lengths[b]`` slices along ``seq_axis`` in reverse order, the rest unchanged.

What ``tf.nn.bidirectional_dynamic_rnn`` reverses padded sequences with. Its gradient is the
same reversal of the incoming gradient.
"""
from __future__ import annotations

from typing import Any

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import ALL_TYPES, register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, create_op, host_ints, shape_error

__all__ = ["reverse_sequence"]


def _kernel(ctx: Any, x: Any, lengths: Any) -> Any:
    seq, batch = ctx.attrs["seq_dim"], ctx.attrs["batch_dim"]
    lens = host_ints(ctx, lengths)
    if len(lens) != x.shape[batch]:
        raise errors.InvalidArgumentError(
            f"Length of seq_lengths != input.dims({batch}), ({len(lens)} vs. "
            f"{x.shape[batch]})", op=ctx.op, hint=tr("give one length per batch entry."))
    out = ctx.xp.array(x, copy=True)
    for b, n in enumerate(lens):
        if not 0 <= n <= x.shape[seq]:
            raise errors.InvalidArgumentError(
                f"seq_lens({b}) > input.dims({seq})" if n > 0 else
                f"seq_lens({b}) < 0", op=ctx.op,
                hint=tr("each length must be between 0 and the sequence dimension."))
        src = [slice(None)] * x.ndim
        src[batch], src[seq] = b, slice(n - 1, None, -1) if n else slice(0, 0)
        dst = list(src)
        dst[seq] = slice(0, n)
        out[tuple(dst)] = x[tuple(src)]
    return out


def _shape(op: Any) -> list:
    x, lengths = op.inputs
    seq, batch = op.attrs["seq_dim"], op.attrs["batch_dim"]
    rank = x.shape.rank
    if rank is not None and not (0 <= seq < rank and 0 <= batch < rank and seq != batch):
        raise shape_error(op, f"Invalid seq_dim {seq} or batch_dim {batch} for input of "
                              f"rank {rank}")
    if lengths.shape.rank is not None and lengths.shape.rank != 1:
        raise shape_error(op, f"Shape must be rank 1 but is rank {lengths.shape.rank}")
    if rank is None or lengths.shape.rank is None:
        return [(x.dtype, x.shape)]
    dims = list(x.shape.dims)
    n = lengths.shape.dims[0]
    if dims[batch] is not None and n is not None and dims[batch] != n:
        raise shape_error(op, f"Dimensions must be equal, but are {dims[batch]} and {n}")
    dims[batch] = dims[batch] if dims[batch] is not None else n
    return [(x.dtype, TensorShape(dims))]


register_op("ReverseSequence", _shape, _kernel, gpu_types=ALL_TYPES)


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None,
                     batch_axis: int | None = None, name: str | None = None,
                     seq_dim: int | None = None, batch_dim: int | None = None) -> Tensor:
    """``tf.reverse_sequence``: reverse each batch entry's first ``seq_lengths[b]`` steps."""
    seq = seq_axis if seq_axis is not None else seq_dim
    batch = batch_axis if batch_axis is not None else (batch_dim or 0)
    if seq is None:
        raise TypeError("reverse_sequence needs seq_axis (the axis of the time steps).")
    x = convert_to_tensor(input, name="input")
    with x.graph.as_default():
        lengths = convert_to_tensor(seq_lengths, name="seq_lengths")
    rank = x.shape.rank
    attrs = {"T": x.dtype, "Tlen": lengths.dtype,
             "seq_dim": seq % rank if rank else seq, "batch_dim": batch % rank if rank else batch}
    return create_op("ReverseSequence", [x, lengths], attrs, name or "ReverseSequence").outputs[0]


def _grad(op: Any, grad: Tensor) -> list:
    return [reverse_sequence(grad, op.inputs[1], op.attrs["seq_dim"], op.attrs["batch_dim"]),
            None]


set_gradient("ReverseSequence", _grad)
