"""A while loop's history for its gradient: ``LoopHistoryPush`` / ``LoopHistoryRead``.

TF 1.x keeps every forward value the gradient of a loop's body needs on a stack (pushed in
each forward iteration, popped by the backward loop). tfteach keeps them in a table per
value, indexed by the iteration number: ``LoopHistoryPush(index, value, *outer)`` stores
``value`` in the forward loop (and gives ``index``, for the counter to wait on);
``LoopHistoryRead(index, *outer)`` in the backward loop gives it back. In a loop nested in
other loops' bodies, ``outer`` are the enclosing loops' iteration numbers (outermost first),
so the key is the iteration path ``(*outer, index)`` (TF's stacks per outer iteration).
The table is the session's shared resource ``loop_history:<name>``; a step writes every key
before it reads it, so each step reads its own values.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.framework.registry import ALL_TYPES, not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, as_shape
from tfteach.ops.common import create_op
from tfteach.ops.control_flow_ops import DEAD
from tfteach.ops.data_flow_ops import shared_resource

__all__ = ["history_push", "history_read"]


class LoopHistory:
    """Values by iteration, for one forward tensor of a loop."""

    def __init__(self) -> None:
        self.values: dict[int, Any] = {}
        self.lock = threading.Lock()

    def release(self) -> None:
        self.values.clear()


def _table(ctx: Any) -> LoopHistory:
    return shared_resource(ctx.resources, "loop_history", ctx.attrs["history"], LoopHistory)


def _key(ctx: Any, index: Any, outer: tuple) -> tuple:
    """The iteration path ``(*outer, index)`` as Python ints."""
    return tuple(int(ctx.device.to_host(i)) for i in (*outer, index))


def _push_kernel(ctx: Any, index: Any, value: Any, *outer: Any) -> Any:
    hist = _table(ctx)
    with hist.lock:
        hist.values[_key(ctx, index, outer)] = _kept(ctx, value)
    return index


def _kept(ctx: Any, value: Any) -> Any:
    """A copy of an array (a later write must not change it); a resource handle (a
    TensorArray made in the iteration) as it is."""
    return ctx.xp.array(value, copy=True) if hasattr(value, "dtype") else value


def _read_kernel(ctx: Any, index: Any, *outer: Any) -> Any:
    """The value pushed at the iteration path; dead where none was (a cond's branch not
    taken in that iteration: the gradient's branch is not taken either)."""
    hist = _table(ctx)
    with hist.lock:
        return hist.values.get(_key(ctx, index, outer), DEAD)


# A push runs when its value is dead too (it then stores nothing): its index, not its value,
# decides (the runtime's "history" role), so a cond's branch in the body never ends the loop.
register_op("LoopHistoryPush", lambda op: [(op.inputs[0].dtype, TensorShape([]))],
            _push_kernel, gpu_types=ALL_TYPES, stateful=True, extra={"flow": "history"})
register_op("LoopHistoryRead", lambda op: [(op.attrs["T"], as_shape(op.attrs["shape"]))],
            _read_kernel, gpu_types=ALL_TYPES, stateful=True)
not_differentiable("LoopHistoryPush", "LoopHistoryRead")


def history_push(index: Tensor, value: Tensor, history: str,
                 outer: Sequence[Tensor] = ()) -> Tensor:
    """Keep ``value`` at the iteration path ``(*outer, index)``; gives ``index``."""
    return create_op("LoopHistoryPush", [index, value, *outer],
                     {"T": value.dtype, "history": history}, "history_push").outputs[0]


def history_read(index: Tensor, like: Tensor, history: str,
                 outer: Sequence[Tensor] = ()) -> Tensor:
    """The value kept at the iteration path ``(*outer, index)`` (dead where none was)."""
    return create_op("LoopHistoryRead", [index, *outer],
                     {"T": like.dtype, "shape": like.shape, "history": history},
                     "history_read").outputs[0]
