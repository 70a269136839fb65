"""Queues: ``tf.FIFOQueue`` (``QueueBase``), its resource and its kernels.

A queue lives in the resource container of the task that runs its ``FIFOQueueV2`` handle
op (see ``tfteach.ops.data_flow_ops`` for shared resources and waiting kernels). Dequeue
from an empty queue and enqueue into a full one return a ``Pending`` that the queue
resolves when its state changes: a device thread never blocks.

State of a queue: ``items`` (deque of component tuples), ``enqueuers``/``dequeuers``
(deques of attempts, served strictly first-come first-served), ``closed``. Invariants:
state changes only under the queue's lock, and Pendings are resolved only after it is
released (their callbacks run executor code). A cancelled or timed-out attempt is removed
before it takes anything, so no element (no sync token) is lost to a dead step.
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes as _dtypes
from tfteach.framework.graph import Operation, Tensor, get_default_graph
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.common import const_value, convert_to_tensor
from tfteach.ops.data_flow_ops import (_HANDLE, _HANDLE_OP, _NO_OUTPUT, _USES_HANDLE, _Attempt,
                                       _handle_attrs, _host, _new_pending, _resolve_all,
                                       _start_waiting, _Waitable, shared_resource)


# ---- the queue ---------------------------------------------------------------------------------
class FIFOQueueResource(_Waitable):
    """A first-in first-out queue of component tuples (see the module docstring).

    Subclasses change which elements a dequeue takes (``_ready``: how many it may take now;
    ``_take``: take them), as ``RandomShuffleQueue`` does."""

    KIND = "FIFOQueue"

    def __init__(self, name: str, capacity: int, component_types: list, shapes: list) -> None:
        super().__init__(name)
        self.capacity = capacity if capacity >= 0 else None
        self.component_types = list(component_types)
        self.shapes = list(shapes)
        self.items: collections.deque = collections.deque()
        self.enqueuers: collections.deque = collections.deque()
        self.dequeuers: collections.deque = collections.deque()
        self.closed = False

    def _lists(self) -> list:
        return [self.enqueuers, self.dequeuers]

    def size(self) -> int:
        with self.lock:
            return len(self.items)

    def check_compatible(self, component_types: list, op: Any) -> None:
        if [t.name for t in component_types] != [t.name for t in self.component_types]:
            raise errors.InvalidArgumentError(
                f"Shared queue '{self.name}' has component types "
                f"{[t.name for t in self.component_types]} but requested component types "
                f"were {[t.name for t in component_types]}", op=op,
                hint=tr("every graph that shares a queue (same shared_name) must create it "
                        "with the same dtypes."))

    def close(self, cancel_pending_enqueues: bool) -> None:
        with self.lock:
            self.closed = True
            done = []
            if cancel_pending_enqueues:
                done = [(a, None, errors.CancelledError("Enqueue operation was cancelled"))
                        for a in self.enqueuers]
                self.enqueuers.clear()
            done += self._progress()
        _resolve_all(done)

    def _progress(self) -> list:
        done: list = []
        moved = True
        while moved:
            moved = self._serve_enqueuers(done) | self._serve_dequeuers(done)
        return done

    def _refusal(self, attempt: _Attempt, queue: collections.deque) -> BaseException | None:
        if queue is self.enqueuers and self.closed and not self.released:
            return self._closed_error()
        return super()._refusal(attempt, queue)

    def _serve_enqueuers(self, done: list) -> bool:
        """Move elements of waiting enqueues in while there is room (also after close)."""
        moved = False
        while self.enqueuers:
            attempt = self.enqueuers[0]
            while attempt.items and (self.capacity is None or len(self.items) < self.capacity):
                self.items.append(attempt.items.pop(0))
                moved = True
            if attempt.items:
                break
            self.enqueuers.popleft()
            done.append(self._finish(attempt, None, None))
        return moved

    def _serve_dequeuers(self, done: list) -> bool:
        moved = False
        while self.dequeuers:
            attempt = self.dequeuers[0]
            need = attempt.need
            if self._ready() < need:
                if not (self.closed and not self.enqueuers):
                    break
                self.dequeuers.popleft()
                if not (isinstance(attempt, UpToAttempt) and self.items):
                    done.append(self._finish(attempt, None, self._insufficient(attempt)))
                    continue
                need = len(self.items)
            else:
                self.dequeuers.popleft()
            taken = self._take(need)
            moved = True
            done.append(self._finish(attempt, self._value(attempt, taken), None))
        return moved

    def _ready(self) -> int:
        """How many elements a dequeue may take now."""
        return len(self.items)

    def _take(self, n: int) -> list:
        return [self.items.popleft() for _ in range(n)]

    @staticmethod
    def _finish(attempt: _Attempt, value: Any, error: BaseException | None) -> tuple:
        attempt.finished = True
        return attempt, value, error

    def _value(self, attempt: _Attempt, taken: list) -> Any:
        if attempt.items is None:        # dequeue: one element, its components
            parts = list(taken[0])
        elif taken:                      # dequeue_many: components stacked
            parts = [np.stack([t[i] for t in taken]) for i in range(len(taken[0]))]
        else:
            parts = [np.zeros((0,), dt.np) for dt in self.component_types]
        return parts[0] if len(parts) == 1 else tuple(parts)

    def _closed_error(self) -> errors.CancelledError:
        return errors.CancelledError(
            f"{self.KIND} '{self.name}' is closed.",
            hint=tr("nothing can be enqueued after queue.close(); create a new queue."))

    def _insufficient(self, attempt: _Attempt) -> errors.OutOfRangeError:
        return errors.OutOfRangeError(
            f"{self.KIND} '{self.name}' is closed and has insufficient elements (requested "
            f"{attempt.need}, current size {len(self.items)})",
            hint=tr("the queue was closed and emptied: this is how input pipelines say "
                    "'end of data'; catch tf.errors.OutOfRangeError to stop."))


class UpToAttempt(_Attempt):
    """A dequeue_up_to: once the queue is closed, it takes what is left (at least one)."""

    __slots__ = ()


# ---- kernels ---------------------------------------------------------------------------------
def _queue_kernel(ctx: Any) -> FIFOQueueResource:
    a = ctx.attrs
    queue = shared_resource(ctx.resources, "queue", a["shared_name"] or ctx.op.name,
                            lambda: FIFOQueueResource(a["shared_name"] or ctx.op.name,
                                                      a["capacity"], a["component_types"],
                                                      a["shapes"]), a["container"])
    queue.check_compatible(a["component_types"], ctx.op)
    return queue


def _enqueue_kernel(ctx: Any, queue: FIFOQueueResource, *components: Any) -> Any:
    element = tuple(_host(ctx, c) for c in components)
    return _enqueue(ctx, queue, [element])


def _enqueue_many_kernel(ctx: Any, queue: FIFOQueueResource, *components: Any) -> Any:
    parts = [_host(ctx, c) for c in components]
    n = {len(p) for p in parts}
    if len(n) != 1:
        raise errors.InvalidArgumentError(
            f"Shape mismatch in tuple component 1. Expected [{len(parts[0])},...], got "
            f"{list(parts[1].shape)}", op=ctx.op,
            hint=tr("enqueue_many takes components with the same first dimension."))
    return _enqueue(ctx, queue, [tuple(p[i] for p in parts) for i in range(n.pop())])


def _enqueue(ctx: Any, queue: FIFOQueueResource, elements: list) -> Any:
    attempt = _Attempt(_new_pending(), len(elements), ctx.op.name, elements)
    return _start_waiting(ctx, queue, attempt, queue.enqueuers)


def _dequeue_kernel(ctx: Any, queue: FIFOQueueResource) -> Any:
    return _start_waiting(ctx, queue, _Attempt(_new_pending(), 1, ctx.op.name), queue.dequeuers)


def _dequeue_many_kernel(ctx: Any, queue: FIFOQueueResource, n: Any) -> Any:
    count = int(ctx.device.to_host(n))
    if count < 0:
        what = "DequeueUpTo" if ctx.op.type == "QueueDequeueUpToV2" else "DequeueMany"
        raise errors.InvalidArgumentError(f"{what} requested {count} < 0 elements",
                                          op=ctx.op, hint=tr("ask for 0 or more elements."))
    kind = UpToAttempt if ctx.op.type == "QueueDequeueUpToV2" else _Attempt
    attempt = kind(_new_pending(), count, ctx.op.name, [])
    return _start_waiting(ctx, queue, attempt, queue.dequeuers)


def _close_kernel(ctx: Any, queue: FIFOQueueResource) -> None:
    queue.close(bool(ctx.attrs["cancel_pending_enqueues"]))


def _size_kernel(ctx: Any, queue: FIFOQueueResource) -> np.ndarray:
    return np.array(queue.size(), dtype=np.int32)


# ---- shape functions and registration ------------------------------------------------------
def _dequeue_shape(op: Operation) -> list:
    a = _handle_attrs(op)
    shapes = a.get("shapes") or [unknown_shape()] * len(a["component_types"])
    return list(zip(a["component_types"], shapes, strict=True))


def _dequeue_many_shape(op: Operation) -> list:
    n = const_value(op.inputs[1])
    first = None if n is None else int(n)
    return [(dt, TensorShape([first] + list(s.dims)) if s.dims is not None else unknown_shape())
            for dt, s in _dequeue_shape(op)]


def _dequeue_up_to_shape(op: Operation) -> list:
    return [(dt, TensorShape([None] + list(s.dims)) if s.dims is not None else unknown_shape())
            for dt, s in _dequeue_shape(op)]


register_op("FIFOQueueV2", lambda op: _HANDLE, _queue_kernel, **_HANDLE_OP)
register_op("QueueEnqueueV2", _NO_OUTPUT, _enqueue_kernel, is_async=True, **_USES_HANDLE)
register_op("QueueEnqueueManyV2", _NO_OUTPUT, _enqueue_many_kernel, is_async=True,
            **_USES_HANDLE)
register_op("QueueDequeueV2", _dequeue_shape, _dequeue_kernel, is_async=True, **_USES_HANDLE)
register_op("QueueDequeueManyV2", _dequeue_many_shape, _dequeue_many_kernel, is_async=True,
            **_USES_HANDLE)
register_op("QueueDequeueUpToV2", _dequeue_up_to_shape, _dequeue_many_kernel, is_async=True,
            **_USES_HANDLE)
register_op("QueueCloseV2", _NO_OUTPUT, _close_kernel, **_USES_HANDLE)
register_op("QueueSizeV2", lambda op: [(_dtypes.int32, TensorShape([]))], _size_kernel,
            **_USES_HANDLE)
not_differentiable("FIFOQueueV2", "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                   "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueCloseV2", "QueueSizeV2")


# ---- Python API ------------------------------------------------------------------------------
def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class QueueBase:
    """What every queue offers: enqueue, enqueue_many, dequeue, dequeue_many, close, size."""

    def __init__(self, dtypes: list, shapes: list, names: list | None, queue_ref: Tensor) -> None:
        self._dtypes = dtypes
        self._shapes = shapes
        self._names = names
        self._queue_ref = queue_ref
        self._name = queue_ref.op.name

    queue_ref = property(lambda self: self._queue_ref)
    name = property(lambda self: self._name)
    dtypes = property(lambda self: list(self._dtypes))
    shapes = property(lambda self: list(self._shapes))
    names = property(lambda self: self._names)

    def _components(self, vals: Any, many: bool) -> list[Tensor]:
        if isinstance(vals, dict):
            vals = [vals[n] for n in self._names]
        vals = _as_list(vals)
        if len(vals) != len(self._dtypes):
            raise ValueError(errors.with_hint(
                f"Expected {len(self._dtypes)} components for queue '{self._name}', got "
                f"{len(vals)}.", tr("enqueue one value per dtype the queue was created with.")))
        g = self._queue_ref.graph
        with g.as_default():
            out = [convert_to_tensor(v, dtype=dt, name=f"component_{i}")
                   for i, (v, dt) in enumerate(zip(vals, self._dtypes, strict=True))]
        for t, shape in zip(out, self._shapes, strict=True):
            have = TensorShape(t.shape.dims[1:]) if many and t.shape.dims else t.shape
            if shape.dims is not None and not shape.is_compatible_with(have):
                raise ValueError(errors.with_hint(
                    f"Shapes {have} and {shape} are incompatible for queue '{self._name}'.",
                    tr("enqueue elements of the shapes the queue was created with.")))
        return out

    def _op(self, op_type: str, inputs: list, attrs: dict, name: str) -> Operation:
        g = self._queue_ref.graph
        with g.as_default(), g.name_scope(name) as scope:
            return g.create_op(op_type, [self._queue_ref] + inputs, attrs, name=scope)

    def enqueue(self, vals: Any, name: str | None = None) -> Operation:
        comps = self._components(vals, many=False)
        return self._op("QueueEnqueueV2", comps, {"Tcomponents": [c.dtype for c in comps],
                                                  "timeout_ms": -1},
                        name or f"{self._name}_enqueue")

    def enqueue_many(self, vals: Any, name: str | None = None) -> Operation:
        comps = self._components(vals, many=True)
        return self._op("QueueEnqueueManyV2", comps, {"Tcomponents": [c.dtype for c in comps],
                                                      "timeout_ms": -1},
                        name or f"{self._name}_EnqueueMany")

    def dequeue(self, name: str | None = None) -> Any:
        op = self._op("QueueDequeueV2", [], {"component_types": list(self._dtypes),
                                             "timeout_ms": -1}, name or f"{self._name}_Dequeue")
        return self._unpacked(op)

    def dequeue_many(self, n: Any, name: str | None = None) -> Any:
        return self._dequeue_n("QueueDequeueManyV2", n, name or f"{self._name}_DequeueMany")

    def dequeue_up_to(self, n: Any, name: str | None = None) -> Any:
        """Like dequeue_many, but once the queue is closed it gives what is left (fewer
        than ``n``) before OutOfRangeError."""
        return self._dequeue_n("QueueDequeueUpToV2", n, name or f"{self._name}_DequeueUpTo")

    def _dequeue_n(self, op_type: str, n: Any, name: str) -> Any:
        g = self._queue_ref.graph
        with g.as_default():
            count = convert_to_tensor(n, dtype=_dtypes.int32, name="n")
        op = self._op(op_type, [count], {"component_types": list(self._dtypes),
                                         "timeout_ms": -1}, name)
        return self._unpacked(op)

    def _unpacked(self, op: Operation) -> Any:
        outs = list(op.outputs)
        if self._names:
            return dict(zip(self._names, outs, strict=True))
        return outs[0] if len(outs) == 1 else outs

    def close(self, cancel_pending_enqueues: bool = False, name: str | None = None) -> Operation:
        return self._op("QueueCloseV2", [], {"cancel_pending_enqueues": cancel_pending_enqueues},
                        name or f"{self._name}_Close")

    def size(self, name: str | None = None) -> Tensor:
        return self._op("QueueSizeV2", [], {}, name or f"{self._name}_Size").outputs[0]


class FIFOQueue(QueueBase):
    """``tf.FIFOQueue(capacity, dtypes, shapes=None, names=None, shared_name=None)``.

    ``capacity`` < 0 means unbounded. Dequeue waits while the queue is empty, enqueue while
    it is full, without holding any device thread.
    """

    def __init__(self, capacity: int, dtypes: Any, shapes: Any = None, names: Any = None,
                 shared_name: str | None = None, name: str = "fifo_queue") -> None:
        types, shape_list = types_and_shapes(dtypes, shapes)
        g = get_default_graph()
        ref = g.create_op("FIFOQueueV2", [], {
            "component_types": types, "shapes": shape_list if shapes is not None else [],
            "capacity": int(capacity), "container": "", "shared_name": shared_name or ""},
            name=name).outputs[0]
        super().__init__(types, shape_list, _as_list(names) if names else None, ref)


def types_and_shapes(dtypes: Any, shapes: Any) -> tuple[list, list]:
    """A queue's component dtypes and shapes (unknown where ``shapes`` is None)."""
    types = [_dtypes.as_dtype(d) for d in _as_list(dtypes)]
    shape_list = ([as_shape(s) for s in _as_list_of_shapes(shapes)] if shapes is not None
                  else [unknown_shape()] * len(types))
    if len(shape_list) != len(types):
        raise ValueError(f"Queue shapes must have the same length as dtypes: "
                         f"{len(shape_list)} vs {len(types)}")
    return types, shape_list


def _as_list_of_shapes(shapes: Any) -> list:
    """``shapes=()`` or ``[2]`` is one shape; ``[(), [2]]`` is one per component."""
    if isinstance(shapes, TensorShape):
        return [shapes]
    items = list(shapes)
    if not items or all(isinstance(d, (int, np.integer)) or d is None for d in items):
        return [items]
    return items
