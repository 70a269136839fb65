"""Shared resources and waiting kernels: what queues and accumulators are built on; and
``dynamic_partition``.

The queues are in ``tfteach.ops.queue_ops``, the gradient accumulators
(``ConditionalAccumulator``, ``SparseConditionalAccumulator``) in
``tfteach.ops.accumulator_ops``; both are importable from here too.

Resources. A queue or an accumulator lives in the resource container of the task that runs
its handle op (``FIFOQueueV2`` / ``ConditionalAccumulator``), keyed by ``shared_name`` (else
the op name): every session and every worker's graph that names the same shared_name on the
same task gets the same object, as in TF. The handle is a ref output, so the placer puts
every op that uses it (enqueue, dequeue, apply_grad, take_grad, ...) on the handle's device.
``shared_resource`` is the one accessor; resetting the container (``Session.reset``,
``ResourceMgr.clear``) calls each resource's ``release``, which fails its waiters.

Waiting kernels. Dequeue from an empty queue, enqueue into a full one and ``take_grad`` with
too few gradients return a ``Pending`` that the resource resolves when its state changes: a
device thread never blocks. A waiting *attempt* ends exactly once, in one of: its value;
``OutOfRangeError`` (queue closed); ``CancelledError`` (the executor called the Pending's
``on_cancel``: the step failed, was aborted or cancelled; or the container was reset);
``DeadlineExceededError`` (the executor called ``on_deadline``: the step's timeout passed).
Kernels learn all of it through the ``Pending`` (``tfteach.framework.kernel``), never by
looking into the runtime. A cancelled attempt is removed before it takes anything, so no
element (no sync token) is lost to a dead step.

Invariants: a resource's state changes only under its lock, and Pendings are resolved only
after it is released (their callbacks run executor code).
"""
from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes as _dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.kernel import Pending
from tfteach.framework.registry import ALL_TYPES, not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, graph_of

CPU_ONLY: frozenset = frozenset()
_TABLE_LOCK = threading.Lock()


# ---- the shared-resource accessor ------------------------------------------------------------
def shared_resource(resources: Any, kind: str, name: str, factory: Callable[[], Any],
                    container: str = "") -> Any:
    """The ``kind`` resource called ``name`` in ``container`` (the op's ``container`` attr;
    ``""``: the default), made by ``factory`` on first use.

    ``resources`` is what kernels see as ``ctx.resources`` (a session's ``ResourceMgr`` or a
    cluster task's step view of it). Entries share the container's table with variables
    under keys ``kind:name`` (op names never contain ':'); each must have ``release()``.
    """
    table = resources.table(container)
    key = f"{kind}:{name}"
    with _TABLE_LOCK:
        found = table.get(key)
        if found is None:
            found = table[key] = factory()
    return found


# ---- attempts and their cancellation ---------------------------------------------------------
class _Attempt:
    """One waiting enqueue/dequeue/take: what it needs, and the Pending it will resolve."""

    __slots__ = ("finished", "items", "need", "op_name", "pending")

    def __init__(self, pending: Any, need: int, op_name: str, items: list | None = None) -> None:
        self.pending = pending
        self.need = need
        self.items = items
        self.op_name = op_name
        self.finished = False


class _Waitable:
    """Base of queues and accumulators: a lock, waiting attempts, resolution after unlock."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.released = False

    def _lists(self) -> list:
        raise NotImplementedError

    def _progress(self) -> list:
        """Serve what can be served now; [(attempt, value, error)] to resolve (lock held)."""
        raise NotImplementedError

    def _refusal(self, attempt: _Attempt, queue: collections.deque) -> BaseException | None:
        """An error that ends ``attempt`` at once (lock held), or None to let it wait."""
        return self._reset_error() if self.released else None

    def wait(self, attempt: _Attempt, queue: collections.deque) -> None:
        with self.lock:
            refused = self._refusal(attempt, queue)
            if refused is not None:
                attempt.finished = True
                done = [(attempt, None, refused)]
            else:
                queue.append(attempt)
                done = self._progress()
        _resolve_all(done)

    def cancel(self, attempt: _Attempt, error: BaseException) -> None:
        """End ``attempt`` with ``error`` unless it already ended (it takes nothing)."""
        with self.lock:
            if attempt.finished:
                return
            for waiting in self._lists():
                if attempt in waiting:
                    waiting.remove(attempt)
            done = [(attempt, None, error)] + self._progress()
        _resolve_all(done)

    def release(self) -> None:
        """The container was reset: every waiter fails, later uses make a new resource."""
        with self.lock:
            self.released = True
            done = [(a, None, self._reset_error()) for waiting in self._lists() for a in waiting]
            for waiting in self._lists():
                waiting.clear()
        _resolve_all(done)

    def _reset_error(self) -> errors.CancelledError:
        return errors.CancelledError(
            f"{type(self).__name__.replace('Resource', '')} '{self.name}' was reset (its "
            "container was cleared)", hint=tr(
                "the task's state was reset (tf.Session.reset or a restart); rebuild the "
                "session and run the initialization again."))

    def read(self, op: Any = None) -> np.ndarray:
        """What fetching the handle gives: its name, as TF's string handle."""
        return np.array(self.name.encode(), dtype=object)


def _resolve_all(done: list) -> None:
    for attempt, value, error in done:
        attempt.pending.resolve(value, error)


def _start_waiting(ctx: Any, resource: _Waitable, attempt: _Attempt,
                   queue: collections.deque) -> Any:
    """Set the cancellation hooks of ``attempt``'s Pending, then queue the attempt.

    The executor calls ``on_cancel`` when the step ends without this result (it failed, was
    aborted or cancelled) and ``on_deadline`` when the step's deadline passes: either ends
    the attempt unless it already ended (see ``tfteach.framework.kernel``)."""
    pending = attempt.pending
    pending.on_cancel = lambda: resource.cancel(attempt, errors.CancelledError(
        f"{attempt.op_name} was cancelled", hint=tr(
            "the step it belonged to failed, was aborted or was interrupted (the first error "
            "of the step says why); the queue keeps its elements for the next step.")))
    pending.on_deadline = lambda: resource.cancel(attempt, errors.DeadlineExceededError(
        f"Timed out waiting in {attempt.op_name} on '{resource.name}'",
        hint=tr("it waits for what another step must give (an element, a free slot, enough "
                "gradients: another worker, the chief, an input thread); is that step "
                "running? Raise RunOptions(timeout_in_ms=...) or "
                "ConfigProto(operation_timeout_in_ms=...) if it is just slow.")))
    resource.wait(attempt, queue)
    return pending


def _new_pending() -> Any:
    return Pending()


def _host(ctx: Any, value: Any) -> np.ndarray:
    return np.array(ctx.device.to_host(value), copy=True)


# ---- what handle ops share (queues, accumulators) -------------------------------------------
_HANDLE = [(_dtypes.string, TensorShape([]))]


def _handle_attrs(op: Operation) -> dict:
    """The attrs of the op that made ``op``'s handle input (through a cond's Switch or a
    loop's Enter, which pass the handle on)."""
    source = op.inputs[0].op
    while source.op_def.extra.get("flow") in ("switch", "enter") and source.inputs:
        source = source.inputs[0].op
    return source.attrs


_NO_OUTPUT = lambda op: []
_HANDLE_OP = {"gpu_types": CPU_ONLY, "stateful": True, "ref_output": True}
_USES_HANDLE = {"gpu_types": CPU_ONLY, "stateful": True, "ref_inputs": (0,)}


# ---- dynamic_partition -----------------------------------------------------------------------
def _dynamic_partition_kernel(ctx: Any, data: Any, partitions: Any) -> tuple:
    xp = ctx.xp
    parts = xp.asarray(partitions)
    if data.shape[:parts.ndim] != parts.shape:
        raise errors.InvalidArgumentError(
            f"data.shape must start with partitions.shape, got data.shape = "
            f"{list(data.shape)}, partitions.shape = {list(parts.shape)}", op=ctx.op,
            hint=tr("give one partition number per row of data."))
    return tuple(data[parts == i] for i in range(ctx.attrs["num_partitions"]))


def _partition_shape(op: Operation) -> list:
    data, parts = op.inputs
    rest = data.shape.dims[parts.shape.ndims:] if (data.shape.dims is not None and
                                                   parts.shape.ndims is not None) else None
    shape = TensorShape([None] + list(rest)) if rest is not None else unknown_shape()
    return [(data.dtype, shape)] * op.attrs["num_partitions"]


register_op("DynamicPartition", _partition_shape, _dynamic_partition_kernel, gpu_types=ALL_TYPES)
not_differentiable("DynamicPartition")


def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list[Tensor]:
    """``tf.dynamic_partition``: ``outputs[i]`` holds the rows of ``data`` whose partition is i."""
    g = graph_of([data, partitions])
    with g.as_default():
        d = convert_to_tensor(data, name="data")
        p = convert_to_tensor(partitions, dtype=_dtypes.int32, name="partitions")
    return list(g.create_op("DynamicPartition", [d, p], {"T": d.dtype,
                                                          "num_partitions": int(num_partitions)},
                            name=name or "DynamicPartition").outputs)


_MOVED = {"tfteach.ops.queue_ops": ("FIFOQueue", "QueueBase", "FIFOQueueResource"),
          "tfteach.ops.accumulator_ops": ("ConditionalAccumulator",
                                          "SparseConditionalAccumulator",
                                          "AccumulatorResource")}


def __getattr__(name: str) -> Any:
    """Queues and accumulators live in their own modules; imports from here still work."""
    for module, names in _MOVED.items():
        if name in names:
            import importlib
            return getattr(importlib.import_module(module), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
