"""The executor: runs a Plan with a ready queue and pending-input counts, one thread per device.

Scheduling (as TF's executor does it): every node starts with a count of
its unfinished inputs; nodes at zero are ready. When a node finishes, its consumers' counts
drop; a consumer that becomes ready on the *same* device runs next in the same thread
(inline, no queue hop); one on another device goes to that device's queue. So different
devices really overlap while cheap same-device chains cost no thread switches.

State of one step (``_Step``): ``values`` (slot -> array), ``pending`` (node -> count),
``uses`` (slot -> reads left; at zero the value is dropped and its bytes returned to the
device budget), ``remaining`` nodes, the first ``error``, and trace records. Only the thread
running a node writes its output slots; counts change under the step's lock.

How work is submitted is a parameter: a plan with no waiting kernels whose expensive
kernels are all on one device (and which uses no real GPU) runs synchronously on the
caller's thread (the same loop, no workers), which is both the fast path and the
deterministic path for tests; nothing in such a plan could overlap anyway. Waiting kernels return a ``Pending``
and never block a device thread: the node completes when the Pending resolves.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any

import numpy as np

from tfteach.devices.gpu import translate_error
from tfteach.errors import CancelledError, DeadlineExceededError, OpError, UnknownError
from tfteach.framework.kernel import Pending  # also imported from here (transport ops, tests)
from tfteach.runtime import blas, host_memory
from tfteach.runtime.config import NodeExecStats, StepStats, TransferStats
from tfteach.runtime.plan import Plan, PlanNode

_now = time.perf_counter_ns


class _NoLock:
    """The synchronous path's stand-in for a lock (one thread touches the step)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_NO_LOCK = _NoLock()


class _Step:
    __slots__ = ("plan", "program", "values", "pending", "uses", "remaining", "error", "done",
                 "lock", "trace", "records", "resources", "cancel_hooks", "t0")

    def __init__(self, plan: Plan, resources: Any, trace: bool) -> None:
        self.plan = plan
        # An inline plan runs one of its programs (the full one when traced or slowed), which
        # needs no counters; the threaded path counts pending inputs and reads left.
        self.program = None
        if plan.run_inline:
            full = trace or any(d.speed < 1.0 for d in plan.devices)
            self.program = plan.full if full else plan.fast
            self.pending, self.uses = None, self.program.uses
        else:
            self.pending, self.uses = [n.pending for n in plan.nodes], list(plan.uses)
        self.values: list = [None] * plan.n_slots
        self.remaining = len(plan.nodes)
        self.error: BaseException | None = None
        self.done: threading.Event | None = None    # made by the threaded path only
        self.lock: Any = _NO_LOCK
        self.trace = trace
        self.records: list = []
        self.resources = resources
        self.cancel_hooks: list = []
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
    """Runs plans; owns one worker thread per device it has used."""

    def __init__(self) -> None:
        self._workers: dict[str, _Worker] = {}
        self._lock = threading.Lock()
        host_memory.keep_freed_memory()

    def close(self) -> None:
        with self._lock:
            for w in self._workers.values():
                w.queue.put(None)
            self._workers.clear()

    def run(self, plan: Plan, feeds: dict, resources: Any, trace: bool = False,
            timeout_s: float | None = None) -> tuple[list, StepStats | None]:
        """Execute ``plan`` with feed values (slot -> array); returns (slot values, stats)."""
        step = _Step(plan, resources, trace)
        for slot, value in feeds.items():
            step.values[slot] = value
        try:
            blas.prepare_for(plan)
            if plan.run_inline:
                self._run_sync(step)
            else:
                self._run_threaded(step, plan.ready, timeout_s)
            if step.error is not None:
                raise step.error
            slots = step.program.fetch_slots if step.program else plan.fetch_slots
            fetched = [None if s is None else step.values[s] for s in slots]
        finally:
            _release(step)
        return fetched, (_stats(step) if trace else None)

    # ---- the two ways of submitting work --------------------------------------------
    def _run_sync(self, step: _Step) -> None:
        """The caller's thread runs the step's ``Program`` (see tfteach.runtime.program).

        The hot path of tfteach: no locks, no pending counts. The fast program runs as one
        generated function (``program.straight_line``); the full one node by node through
        ``_execute`` (traces, stretched time).
        """
        values, program = step.values, step.program
        node = None
        try:
            for node, s, value in program.constants:
                _keep(node, (program.budget[s],), value, values)
            node = None
            if program.run is not None:
                program.run(values)
                return
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

    def _run_threaded(self, step: _Step, ready: list[int], timeout_s: float | None) -> None:
        if not ready and step.remaining:
            step.error = UnknownError("The graph has no ready op: a cycle?")
            return
        if step.remaining == 0:
            return
        step.done = threading.Event()
        step.lock = threading.Lock()
        for i in ready:
            self._submit(step, i)
        deadline = None if not timeout_s else time.monotonic() + timeout_s
        try:
            while not step.done.wait(0.05):
                if deadline and time.monotonic() > deadline:
                    self._fail(step, DeadlineExceededError(
                        "Timed out waiting for the step to finish",
                        hint="a node is waiting for input that never comes (a queue, a "
                             "dead task?); raise RunOptions.timeout_in_ms if it is just slow."))
        except KeyboardInterrupt:
            self._fail(step, CancelledError("Step was cancelled by the user (Ctrl-C)"))
            raise

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
        """Run ``start`` and every same-device node that becomes ready because of it."""
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
            if nodes[c].runner is device:
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
        if pending.on_cancel is not None:
            step.cancel_hooks.append(pending.on_cancel)

        def done(value: Any, error: BaseException | None) -> None:
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
            self._finish(step, node, value, stack, None)
            for i in stack:
                self._submit(step, i)

        pending.add_done_callback(done)

    def _fail(self, step: _Step, error: BaseException) -> None:
        with step.lock:
            if step.error is not None:
                return
            step.error = error
            hooks, step.cancel_hooks = step.cancel_hooks, []
        for hook in hooks:
            try:
                hook()
            except Exception:  # noqa: BLE001 (cancellation is best effort)
                pass
        if step.done is not None:
            step.done.set()


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
    return UnknownError(f"{type(e).__name__}: {e}\n\t [[Node: {summary}]]", op=node.op,
                        hint=f"the kernel of '{node.name}' ({node.type}) on "
                             f"{node.device.name} failed; check its inputs' values.")


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
