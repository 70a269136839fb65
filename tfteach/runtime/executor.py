"""The executor: runs a Plan with a ready queue and pending-input counts, one thread per device.

Scheduling (as TF's executor does it): every node starts with a count of
its unfinished inputs; nodes at zero are ready. When a node finishes, its consumers' counts
drop; a consumer that becomes ready on the *same* device runs next in the same thread
(inline, no queue hop); one on another device goes to that device's queue. So different
devices really overlap while cheap same-device chains cost no thread switches.

State of one step (``_Step``): ``values`` (slot -> array), ``pending`` (node -> count),
``uses`` (slot -> reads left; at zero the value is dropped and its bytes returned to the
device budget), ``remaining`` nodes, the first ``error``, the ``waiting`` Pendings, and trace
records. Only the thread running a node writes its output slots; counts change under the
step's lock.

How ready nodes are submitted is a parameter (as in dask: one scheduler, several ways to
submit), chosen by ``Executor(mode=...)`` (``MODES``; tests pick one, sessions use "auto"):

- "threaded": each device's worker thread runs its nodes (a submit puts the node in the
  device's queue).
- "sync": the same loop on the caller's thread; a submit runs the node at once (every
  ready consumer goes on the one stack), so a run is deterministic: the depth-first order,
  the last ready node first. A Pending's result, a cancellation and the deadline reach the
  loop as events in the step's inbox, so kernels and bookkeeping all run on that thread.
  (A plan with a real GPU runs threaded: a GPU binds its stream in its own thread.)
- "program": the synchronous order compiled once per plan (``tfteach.runtime.program``):
  no locks, no counts. Only for inline plans (no waiting kernels, host devices, expensive
  kernels on one device), where nothing could overlap anyway.
- "auto" (the default): "program" for inline plans, else "threaded".

Waiting kernels return a ``Pending`` and never block a device thread: the node completes
when the Pending resolves. Cancellation comes from the top: ``cancel(step_id, error)`` (the
engine, when the master aborts a step) or a failed node ends the step, and the executor
tells each kernel still waiting in it (``Pending.cancel``, the kernel's ``on_cancel``). A
step's deadline (``timeout_s``) is the caller's own wait with a timeout, no extra thread:
when it passes, each waiting kernel is timed out (``Pending.expire``, its ``on_deadline``)
and the step fails, unless the caller leaves that to its master (``timeout_ends_step``).
"""
from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from tfteach.devices.gpu import translate_error
from tfteach.errors import (
    CancelledError,
    DeadlineExceededError,
    OpError,
    ResourceExhaustedError,
    UnknownError,
)
from tfteach.framework.kernel import Pending  # also imported from here (transport ops, tests)
from tfteach.i18n import tr
from tfteach.runtime import blas, frames, host_memory
from tfteach.runtime.plan import Plan, PlanNode
from tfteach.runtime.session_config import NodeExecStats, StepStats, TransferStats

_now = time.perf_counter_ns


class _NoLock:
    """The program path's stand-in for a lock (one thread touches the step)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_NO_LOCK = _NoLock()


MODES = ("auto", "program", "sync", "threaded")
CANCELLED_MEMORY = 1024     # cancelled step ids remembered, so a late part fails at once
WAKE_S = 0.1                # the caller wakes this often while it waits (Ctrl-C gets through)
_ANY = object()             # the sync path's runner: every node runs on the caller's thread
_DONE, _CANCEL, _FAIL = "done", "cancel", "fail"   # step events (a sync step queues them)


class _Step:
    __slots__ = ("plan", "program", "values", "pending", "uses", "remaining", "error", "done",
                 "lock", "trace", "records", "resources", "waiting", "inbox", "timed_out",
                 "t0")

    def __init__(self, plan: Plan, resources: Any, trace: bool, program: Any) -> None:
        self.plan = plan
        # A program needs no counters; the ready-queue paths count pending inputs and reads.
        self.program = program
        if program is not None:
            self.pending, self.uses = None, program.uses
            self.lock: Any = _NO_LOCK
        else:
            self.pending, self.uses = [n.pending for n in plan.nodes], list(plan.uses)
            self.lock = threading.Lock()
        self.values: list = [None] * plan.n_slots
        self.remaining = len(plan.nodes)
        self.error: BaseException | None = None
        self.done = threading.Event() if program is None else None
        self.trace = trace
        self.records: list = []
        self.resources = resources
        self.waiting: list[Pending] = []      # Pendings returned by its kernels
        self.inbox: queue.SimpleQueue | None = None    # the sync path's events
        self.timed_out = False
        self.t0 = time.time_ns() - _now()


class _Worker:
    """One device's thread: takes (step, node) items and drains them."""

    def __init__(self, executor: "Executor", device: Any) -> None:
        self.device = device
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, args=(executor,), daemon=True,
                                       name=f"tfteach-{device.short_name}")
        self.thread.start()

    def _loop(self, executor: "Executor") -> None:
        self.device.thread_init()
        while True:
            item = self.queue.get()
            if item is None:
                return
            step, index = item
            executor._drain(step, index, self.device)


class Executor:
    """Runs plans; owns one worker thread per device it has used. ``mode``: how ready nodes
    are submitted (see the module docstring; "auto" unless a test asks for a path)."""

    def __init__(self, mode: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"Executor mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self._workers: dict[str, _Worker] = {}
        self._lock = threading.Lock()
        self._running: dict[Any, list[_Step]] = {}      # step id -> its steps running here
        self._cancelled: OrderedDict[Any, BaseException] = OrderedDict()
        host_memory.keep_freed_memory()

    def close(self) -> None:
        with self._lock:
            for w in self._workers.values():
                w.queue.put(None)
            self._workers.clear()

    def run(self, plan: Plan, feeds: dict, resources: Any, trace: bool = False,
            timeout_s: float | None = None, step_id: Any = None,
            timeout_ends_step: bool = True) -> tuple[list, StepStats | None]:
        """Execute ``plan`` with feed values (slot -> array); returns (slot values, stats).

        ``timeout_s``: the step's deadline (see the module docstring); ``step_id``: the id
        ``cancel`` knows the step by (a cluster step's; None: it cannot be cancelled so).
        A step cancelled before it starts fails at once, on every path, running no kernel."""
        aborted = None if step_id is None else self._cancelled.get(step_id)
        if aborted is not None:
            raise aborted
        if plan.has_flow:
            return self._run_frames(plan, feeds, resources, trace, timeout_s, step_id)
        path = self._path(plan)
        step = _Step(plan, resources, trace, _program(plan, trace) if path == "program" else None)
        for slot, value in feeds.items():
            step.values[slot] = value
        try:
            blas.prepare_for(plan)
            if step.program is not None:
                self._run_program(step)
            else:
                deadline = None if not timeout_s else time.monotonic() + timeout_s
                self._run_step(step, path, deadline, timeout_ends_step, step_id)
            if step.error is not None:
                raise step.error
            slots = step.program.fetch_slots if step.program else plan.fetch_slots
            fetched = [None if s is None else step.values[s] for s in slots]
        finally:
            _release(step)
        return fetched, (_stats(step) if trace else None)

    def _run_frames(self, plan: Plan, feeds: dict, resources: Any, trace: bool,
                    timeout_s: float | None, step_id: Any) -> tuple[list, StepStats | None]:
        """A plan with control flow runs on the caller's thread (``tfteach.runtime.frames``),
        looking now and then whether ``cancel`` ended its step."""
        step = _Step(plan, resources, trace, None)
        fetched = frames.run(step, feeds, _as_op_error, timeout_s,
                             lambda: None if step_id is None else self._cancelled.get(step_id))
        return fetched, (_stats(step) if trace else None)

    def cancel(self, step_id: Any, error: BaseException) -> None:
        """End the steps running as ``step_id`` (and fail one that starts later) with
        ``error``. Each kernel still waiting in them is told first (its ``on_cancel``), so a
        step ends with the first error a kernel gives, else with ``error``."""
        with self._lock:
            self._cancelled[step_id] = error
            self._cancelled.move_to_end(step_id)
            while len(self._cancelled) > CANCELLED_MEMORY:
                self._cancelled.popitem(last=False)
            steps = list(self._running.get(step_id, ()))
        for step in steps:
            self._event(step, (_CANCEL, error))

    def _path(self, plan: Plan) -> str:
        if self.mode == "auto":
            return "program" if plan.run_inline else "threaded"
        if self.mode == "program" and not plan.run_inline:
            raise ValueError("Only an inline plan (Plan.run_inline) runs as a compiled program")
        if self.mode == "sync" and any(d.is_gpu for d in plan.devices):
            return "threaded"
        return self.mode

    # ---- the ways of submitting work ------------------------------------------------
    def _run_program(self, step: _Step) -> None:
        """The caller's thread runs the step's ``Program`` (see tfteach.runtime.program).

        The hot path of tfteach: no locks, no pending counts. The fast program runs as one
        generated function (``program.straight_line``); the full one node by node through
        ``_execute`` (traces, stretched time).
        """
        values, program = step.values, step.program
        node = None
        try:
            if program.run is not None:     # (it stores the folded constants first)
                program.run(values)
                return
            for node, s, value in program.constants:
                _keep(node, (program.budget[s],), value, values)
            for node, ins, keep, drops in program.instrs:
                out = self._execute(step, node, ins)
                _keep(node, keep, out, values)
                for s, budget in drops:
                    if budget is not None:
                        budget.used -= getattr(values[s], "nbytes", 0)
                    values[s] = None
        except BaseException as e:  # noqa: BLE001 (Ctrl-C too: the step's memory is released)
            node = node or program.node_at(e)
            err = e if node is None else _as_op_error(e, node)
            step.error = err
            if err is e:
                raise
            raise err from e

    def _run_step(self, step: _Step, path: str, deadline: float | None, ends: bool,
                  step_id: Any) -> None:
        """Run ``step`` on the ready-queue path ``path``, known as ``step_id`` meanwhile."""
        if step_id is not None:
            with self._lock:
                step.error = self._cancelled.get(step_id)
                self._running.setdefault(step_id, []).append(step)
        try:
            if step.error is None and self._can_start(step):
                if path == "sync":
                    self._run_sync(step, deadline, ends)
                else:
                    self._run_threaded(step, deadline, ends)
        finally:
            if step_id is not None:
                with self._lock:
                    steps = self._running[step_id]
                    steps.remove(step)
                    if not steps:
                        del self._running[step_id]

    @staticmethod
    def _can_start(step: _Step) -> bool:
        if step.remaining and not step.plan.ready:
            step.error = UnknownError("The graph has no ready op: a cycle?")
        return bool(step.remaining) and step.error is None

    def _run_threaded(self, step: _Step, deadline: float | None, ends: bool) -> None:
        for i in step.plan.ready:
            self._submit(step, i)
        self._wait(step, deadline, ends, step.done.wait)

    def _run_sync(self, step: _Step, deadline: float | None, ends: bool) -> None:
        """The ready-queue loop on the caller's thread: a submit runs the node at once."""
        inbox = step.inbox = queue.SimpleQueue()

        def next_event(timeout: float) -> None:
            try:
                self._handle(step, inbox.get(timeout=timeout))
            except queue.Empty:
                pass

        try:
            self._drain(step, list(step.plan.ready), _ANY)
        except KeyboardInterrupt:
            self._fail(step, CancelledError("Step was cancelled by the user (Ctrl-C)"))
            raise
        self._wait(step, deadline, ends, next_event)

    def _wait(self, step: _Step, deadline: float | None, ends: bool,
              wait: Callable[[float], Any]) -> None:
        """Wait (``wait(seconds)``: at most that long) until the step is over; at the
        deadline time its waiting kernels out and, if ``ends``, fail it."""
        try:
            while not step.done.is_set():
                left = WAKE_S if deadline is None else deadline - time.monotonic()
                if left <= 0:
                    deadline = None
                    self._expire(step, ends)
                    continue
                wait(min(left, WAKE_S))
        except KeyboardInterrupt:
            self._fail(step, CancelledError("Step was cancelled by the user (Ctrl-C)"))
            raise

    def _expire(self, step: _Step, ends: bool) -> None:
        """The step's deadline passed: each waiting kernel times out (``on_deadline``);
        a step that still runs after them fails, if ``ends``."""
        step.timed_out = True
        for pending in list(step.waiting):
            _quietly(pending.expire)
        if ends:
            self._event(step, (_FAIL, DeadlineExceededError(
                "Timed out waiting for the step to finish",
                hint=tr("a node is waiting for input that never comes (a queue, a dead "
                        "task?); raise RunOptions.timeout_in_ms if it is just slow."))))

    def _event(self, step: _Step, event: tuple) -> None:
        """Handle ``event`` now, or (a sync step) in the step's own thread, after the
        events already in its inbox (the kernels' own errors come first)."""
        if step.inbox is not None:
            step.inbox.put(event)
        else:
            self._handle(step, event)

    def _handle(self, step: _Step, event: tuple) -> None:
        kind = event[0]
        if kind is _DONE:
            _, node, pending, value, error = event
            self._resume(step, node, pending, value, error, _ANY)
        elif kind is _CANCEL:
            for pending in list(step.waiting):
                _quietly(pending.cancel)
            self._event(step, (_FAIL, event[1]))
        else:
            self._fail(step, event[1])

    def _submit(self, step: _Step, index: int) -> None:
        dev = step.plan.nodes[index].runner
        w = self._workers.get(dev.name)
        if w is None:
            with self._lock:
                w = self._workers.get(dev.name) or _Worker(self, dev)
                self._workers[dev.name] = w
        w.queue.put((step, index))

    # ---- running nodes ------------------------------------------------------------------
    def _drain(self, step: _Step, start: Any, device: Any) -> None:
        """Run ``start`` and every same-device node that becomes ready because of it
        (``device`` ``_ANY``: every node that becomes ready)."""
        stack = list(start) if isinstance(start, list) else [start]
        nodes = step.plan.nodes
        while stack:
            if step.error is not None:
                return
            node = nodes[stack.pop()]
            try:
                out = self._execute(step, node)
            except BaseException as e:  # noqa: BLE001 (reported through the step)
                self._fail(step, _as_op_error(e, node))
                if not isinstance(e, Exception):
                    raise
                return
            if isinstance(out, Pending):
                self._await(step, node, out)
                continue
            self._finish(step, node, out, stack, device)

    def _execute(self, step: _Step, node: PlanNode, ins: list | None = None) -> Any:
        values = step.values
        args = [values[s] for s in (node.in_slots if ins is None else ins)]
        if node.deref is not None:
            args = [a.read(node.op) if d else a for a, d in zip(args, node.deref, strict=True)]
        dev = node.device
        if step.trace or dev.speed < 1.0:
            t0 = _now()
            out = node.kernel(node.ctx, *args)
            dev.synchronize()
            t_op = _now()
            if dev.speed < 1.0:
                time.sleep((t_op - t0) * (1.0 / dev.speed - 1.0) / 1e9)
            if step.trace:
                if isinstance(out, Pending):
                    out.started_ns = t0
                else:
                    step.records.append((node, t0, t_op, _now(), threading.get_ident(),
                                         _nbytes(out)))
            return out
        return node.kernel(node.ctx, *args)

    def _finish(self, step: _Step, node: PlanNode, out: Any, stack: list, device: Any) -> None:
        self._store(step, node, out)
        nodes = step.plan.nodes
        with step.lock:
            ready = []
            for c in node.consumers:
                step.pending[c] -= 1
                if step.pending[c] == 0:
                    ready.append(c)
            step.remaining -= 1
            last = step.remaining == 0
        for c in ready:
            if nodes[c].runner is device or device is _ANY:
                stack.append(c)
            else:
                self._submit(step, c)
        if last:
            step.done.set()

    def _store(self, step: _Step, node: PlanNode, out: Any) -> None:
        """Keep a node's outputs and drop inputs it read last (threaded: budgets locked)."""
        values, uses = step.values, step.uses
        mem = node.device.memory
        outs = (out,) if len(node.out_slots) == 1 else out or ()
        for s, v in zip(node.out_slots, outs, strict=True):
            if s >= 0:
                nbytes = getattr(v, "nbytes", 0)
                if nbytes and uses[s]:
                    mem.alloc(nbytes, v.shape, v.dtype, node.name, node.device.name)
                values[s] = v
        with step.lock:
            dropped = []
            for s in node.in_slots:
                uses[s] -= 1
                if uses[s] == 0:
                    dropped.append(s)
        for s in dropped:
            v, values[s] = values[s], None
            nbytes = getattr(v, "nbytes", 0)
            if nbytes:
                step.plan.slot_device[s].memory.free(nbytes)

    def _await(self, step: _Step, node: PlanNode, pending: Pending) -> None:
        """Complete ``node`` when ``pending`` resolves (a sync step: in its own thread)."""
        step.waiting.append(pending)
        if step.error is not None:      # the step failed while the kernel started waiting
            _quietly(pending.cancel)
        elif step.timed_out:
            _quietly(pending.expire)
        if step.inbox is not None:
            inbox = step.inbox
            pending.add_done_callback(lambda value, error: inbox.put(
                (_DONE, node, pending, value, error)))
        else:
            pending.add_done_callback(lambda value, error: self._resume(
                step, node, pending, value, error, None))

    def _resume(self, step: _Step, node: PlanNode, pending: Pending, value: Any,
                error: BaseException | None, runner: Any) -> None:
        """A waiting node's result came: finish it, run (``runner`` ``_ANY``) or submit
        what became ready."""
        if error is not None:
            self._fail(step, _as_op_error(error, node))
            return
        if step.error is not None:
            return
        if step.trace and pending.started_ns is not None:
            t1 = _now()
            step.records.append((node, pending.started_ns, t1, t1, threading.get_ident(),
                                 _nbytes(value)))
        stack: list[int] = []
        self._finish(step, node, value, stack, runner)
        if runner is _ANY:
            self._drain(step, stack, _ANY)
        else:
            for i in stack:
                self._submit(step, i)

    def _fail(self, step: _Step, error: BaseException) -> None:
        """The step ends with ``error`` (unless it already failed); its waiting kernels
        are told (``on_cancel``)."""
        with step.lock:
            if step.error is not None:
                return
            step.error = error
            waiting, step.waiting = step.waiting, []
        for pending in waiting:
            _quietly(pending.cancel)
        if step.done is not None:
            step.done.set()


def _program(plan: Plan, trace: bool) -> Any:
    """The program an inline step runs: the full one when traced or a device is slowed."""
    full = trace or any(d.speed < 1.0 for d in plan.devices)
    return plan.full if full else plan.fast


def _quietly(hook: Callable[[], None]) -> None:
    try:
        hook()
    except Exception:  # noqa: BLE001 (cancellation is best effort)
        pass


def _keep(node: PlanNode, keep: tuple, out: Any, values: list) -> None:
    """Store a node's outputs for the inline loop, counting their bytes where ``keep`` says."""
    if len(node.out_slots) == 1:
        s, budget = node.out_slots[0], keep[0]
        if s < 0:
            return
        if budget is not None:
            nbytes = getattr(out, "nbytes", 0)
            if nbytes:
                budget.take(nbytes, out, node.name, node.device.name)
        values[s] = out
        return
    for s, budget, v in zip(node.out_slots, keep, out or (), strict=True):
        if s >= 0:
            if budget is not None and getattr(v, "nbytes", 0):
                budget.take(v.nbytes, v, node.name, node.device.name)
            values[s] = v


def _release(step: _Step) -> None:
    """Return the bytes of every value still held (fetches included) to its device.

    After a successful run only fetched values are left (every other value was dropped by
    its last consumer, or never counted because nothing used it); after a failure, scan all.
    """
    plan, prog = step.plan, step.program
    fed = plan.feed_slots.values()
    fetch = prog.fetch_slots if prog else plan.fetch_slots
    slots = range(len(step.values)) if step.error is not None else \
        (s for s in set(fetch) if s is not None)
    for s in slots:
        v = step.values[s]
        if v is None:
            continue
        budget = prog.budget[s] if prog else \
            (plan.slot_device[s].memory if s not in fed and step.uses[s] > 0 else None)
        nbytes = getattr(v, "nbytes", 0)
        if budget is not None and nbytes:
            budget.free(nbytes)
    if step.error is not None:
        step.values = [None] * len(step.values)


def _as_op_error(e: BaseException, node: PlanNode) -> BaseException:
    if isinstance(e, OpError) or not isinstance(e, Exception):
        return e
    translated = translate_error(e, node.name, node.device.name)
    if translated is not None:
        return translated
    summary = node.op.summary() if node.op is not None else node.name
    if isinstance(e, MemoryError):      # NumPy could not allocate: TF's OOM
        return ResourceExhaustedError(
            f"OOM when allocating tensor on {node.device.name}: {e}\n\t [[Node: {summary}]]",
            op=node.op, hint=tr("'{name}' ({type}) needed more memory than {device} could "
                                "give ({detail}): use smaller tensors or batches.",
                                name=node.name, type=node.type, device=node.device.name,
                                detail=str(e) or "MemoryError"))
    return UnknownError(f"{type(e).__name__}: {e}\n\t [[Node: {summary}]]", op=node.op,
                        hint=tr("the kernel of '{name}' ({type}) on {device} failed; check "
                                "its inputs' values.", name=node.name, type=node.type,
                                device=node.device.name))


def _stats(step: _Step) -> StepStats:
    stats = StepStats()
    for node, t0, t_op, t1, tid, nbytes in step.records:
        start_us = (step.t0 + t0) // 1000
        dur_us = max(1, (t1 - t0) // 1000)
        if node.transfer is not None:
            tensor, src, src_op = node.transfer
            stats.transfers.append(TransferStats(tensor, src.name, node.device.name, src_op,
                                                 node.name, start_us, dur_us, nbytes))
            continue
        stats.device_stats(node.device.name).node_stats.append(NodeExecStats(
            node.name, node.type, start_us, dur_us, nbytes, tid,
            f"{node.name} = {node.type}({', '.join(t.op.name for t in node.op.inputs)})",
            max(1, (t_op - t0) // 1000)))
    return stats


def _nbytes(out: Any) -> int:
    if isinstance(out, (tuple, list)):
        return sum(int(getattr(v, "nbytes", 0) or 0) for v in out)
    return int(getattr(out, "nbytes", 0) or 0)


def to_fetch_value(value: Any, device: Any, deref: bool, op: Any = None) -> Any:
    """A fetched value as the client sees it: a host NumPy array (a scalar for 0-d)."""
    if deref:
        value = value.read(op)
    value = device.to_host(value)
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable:
            return value.copy()
        return value
    return value
