"""Frames: running a plan with control flow (cond, while_loop), as TF's executor does.

A plan that holds ``Switch``/``Merge``/``Enter``/``Exit``/``NextIteration``/``LoopCond``
(``Plan.has_flow``; the ops' roles are ``OpDef.extra["flow"]``) runs here, on the caller's
thread, with TF's rules:

- Every value lives in a context ``(frame, iteration)``. The root frame is ``ROOT``; an
  ``Enter`` moves its value into the child frame ``(parent frame, parent iteration, frame
  name)``, iteration 0 (a constant ``Enter``: into every iteration of that frame, started
  or to come); ``NextIteration`` into the next iteration; ``Exit`` back to the parent.
- Dead tensors: an untaken ``Switch`` output is ``DEAD``. A node with a dead input (data or
  control) does not run; its outputs are dead. A ``Merge`` runs on its first live input; it
  is dead once all its inputs from outside the loop are. A dead ``NextIteration`` ends its
  frame's iterations (nothing is sent on); a dead ``Exit`` leaves a frame only if no live
  value entered it (a loop in an untaken branch), else each iteration's dead exit is dropped.
- Per (node, context) the step counts arrived inputs; at the node's input count it runs.
  Values are dropped after their last read in their context.

State of a run (``_Run``): ``values`` ((slot, context) -> value), ``constants`` ((frame,
slot) -> a constant Enter's value), ``frames`` (frame -> started iterations, constant
Enters, live), ``arrived`` ((node, context) -> [inputs arrived, dead, dead merge inputs, done]),
``ready`` (a stack of (node, context)). Waiting kernels (``Pending``) are waited for in place;
a cancelled step (``Executor.cancel``) or a passed deadline ends the run between nodes.
Kept values count against their device's memory budget until their last read in their
context (``charged``), and all are returned when the run ends.
Traced runs record every execution, so each iteration shows in the timeline.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

import numpy as np

from tfteach.errors import DeadlineExceededError, InvalidArgumentError
from tfteach.framework.kernel import Pending
from tfteach.i18n import tr
from tfteach.ops.control_flow_ops import DEAD

ROOT = ("",)
_MISSING = object()
_now = time.perf_counter_ns


class FlowInfo:
    """The plan's edges as the frame rules need them (built once per plan): each node's
    predecessors (data and control, back edges included), consumers, role, and how many
    inputs of a ``Merge`` come from outside its loop."""

    def __init__(self, plan: Any) -> None:
        nodes = plan.nodes
        producer = {s: n.index for n in nodes for s in n.out_slots if s >= 0}
        preds: list[set] = [set() for _ in nodes]
        for n in nodes:
            for c in n.consumers:
                preds[c].add(n.index)
            preds[n.index].update(producer[s] for s in n.in_slots if s in producer)
        self.consumers: list[list] = [[] for _ in nodes]
        for j, ps in enumerate(preds):
            for p in ps:
                self.consumers[p].append(j)
        self.n_preds = [len(p) for p in preds]
        self.role = [n.op_def.extra.get("flow") if n.op_def is not None else None
                     for n in nodes]
        self.forward_inputs = [sum(1 for s in n.in_slots if s not in producer or
                                   self.role[producer[s]] != "next") for n in nodes]
        self.producer = producer
        self.start = [n.index for n in nodes if not preds[n.index]]


def flow_info(plan: Any) -> FlowInfo:
    if plan.flow is None:
        plan.flow = FlowInfo(plan)
    return plan.flow


class _Run:
    def __init__(self, step: Any, feeds: dict, as_error: Callable, deadline: float | None,
                 cancelled: Callable[[], BaseException | None]) -> None:
        self.step, self.plan = step, step.plan
        self.info = flow_info(self.plan)
        self.as_error = as_error
        self.deadline, self.cancelled = deadline, cancelled
        self.values: dict = {(s, (ROOT, 0)): v for s, v in feeds.items()}
        self.fed = set(feeds)
        self.uses: dict = {}
        self.charged: dict = {}         # (slot, context) -> (device budget, bytes)
        self.dropped: list = []         # keys read for the last time by the node running
        self.constants: dict = {}
        self.frames: dict = {}
        self.arrived: dict = {}
        self.ready: list = [(i, (ROOT, 0)) for i in reversed(self.info.start)]

    # ---- values ------------------------------------------------------------------------
    def lookup(self, s: int, ctx: tuple) -> Any:
        v = self.values.get((s, ctx), _MISSING)
        if v is _MISSING:
            v = self.constants.get((ctx[0], s), _MISSING)
        if v is _MISSING and s in self.fed:
            v = self.values[(s, (ROOT, 0))]
        return v

    def read(self, s: int, ctx: tuple) -> Any:
        v = self.lookup(s, ctx)
        key = (s, ctx)
        if key in self.values and s not in self.fed:
            left = self.uses.get(key, self.plan.uses[s]) - 1
            if left <= 0:
                del self.values[key]
                self.uses.pop(key, None)
                self.dropped.append(key)    # its bytes return once the reader's are kept
            else:
                self.uses[key] = left
        return v

    # ---- the loop ------------------------------------------------------------------------
    def run(self) -> None:
        nodes, count = self.plan.nodes, 0
        while self.ready:
            i, ctx = self.ready.pop()
            count += 1
            if count % 256 == 0:
                self._check(count)
            self.fire(nodes[i], ctx, self.arrived.pop((i, ctx), [0, False, 0, True])[1])

    def _check(self, count: int) -> None:
        """End the step if it was cancelled (its master aborted it) or ran out of time."""
        error = self.cancelled()
        if error is not None:
            raise error
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise DeadlineExceededError("Timed out waiting for the step to finish", hint=tr(
                "a while_loop may not end: check that its cond becomes false."))

    def fire(self, node: Any, ctx: tuple, dead: bool) -> None:
        role = self.info.role[node.index]
        args = [self.read(s, ctx) for s in node.in_slots]
        if node.deref is not None:
            args = [a.read(node.op) if d and a is not DEAD and a is not _MISSING else a
                    for a, d in zip(args, node.deref, strict=True)]
        if role == "merge":
            out = self._merge(args)
        elif role == "history" and args[0] is not DEAD and args[1] is DEAD:
            out = (args[0],)                # nothing to keep from an untaken branch
        elif role == "history" and args[0] is not DEAD:
            out = (self._call(node, args),)
        elif (dead or any(a is DEAD for a in args)) and node.op_def is not None and \
                node.op_def.extra.get("takes_dead"):
            out = self._call(node, [DEAD] * len(args))      # a _Send passes deadness on
            out = (out,) if len(node.out_slots) == 1 else tuple(out or ())
        elif dead or any(a is DEAD for a in args):
            out = (DEAD,) * len(node.out_slots)
        else:
            out = self._call(node, args)
            out = (out,) if len(node.out_slots) == 1 else tuple(out or ())
        self.emit(node, ctx, out)
        for key in self.dropped:
            self._free(key)
        self.dropped.clear()

    @staticmethod
    def _merge(args: list) -> tuple:
        for k, a in enumerate(args):
            if a is not DEAD and a is not _MISSING:
                return a, np.asarray(k, dtype=np.int32)
        return DEAD, DEAD

    def _call(self, node: Any, args: list) -> Any:
        step = self.step
        t0 = _now()
        try:
            out = node.kernel(node.ctx, *args)
            if isinstance(out, Pending):
                out = self._wait(out)
        except Exception as e:  # noqa: BLE001 (reported as the op's error)
            raise self.as_error(e, node) from e
        if step.trace:
            node.device.synchronize()
            t1 = _now()
            nbytes = sum(int(getattr(v, "nbytes", 0) or 0) for v in
                         (out if isinstance(out, tuple) else (out,)))
            step.records.append((node, t0, t1, t1, threading.get_ident(), nbytes))
        return out

    def _wait(self, pending: Pending) -> Any:
        """A waiting kernel's result; a cancellation or the deadline ends its wait (its
        ``on_cancel`` / ``on_deadline``), as on the executor's other paths."""
        done = threading.Event()
        box: list = []
        pending.add_done_callback(lambda value, error: (box.append((value, error)), done.set()))
        told = False
        while not done.wait(0.1):
            if told:
                continue
            if self.cancelled() is not None:
                pending.cancel()
                told = True
            elif self.deadline is not None and time.monotonic() > self.deadline:
                pending.expire()
                told = True
        value, error = box[0]
        if error is not None:
            raise error
        return value

    def emit(self, node: Any, ctx: tuple, out: tuple) -> None:
        """Store a node's outputs in their context and tell its consumers."""
        role = self.info.role[node.index]
        frame, it = ctx
        if role == "enter":
            child = (frame, it, node.op.attrs["frame_name"])
            if node.op.attrs.get("is_constant"):
                self._constant(node, child, out)
                return
            ctx = (child, 0)
            if out[0] is not DEAD:
                self._frame(child)[2] = True
        elif role == "exit":
            if out[0] is DEAD and self._frame(frame)[2]:
                return                      # a live loop leaves only through live exits
            ctx = (frame[0], frame[1]) if frame is not ROOT else ctx
        elif role == "next":
            if out[0] is DEAD:
                return                      # the loop ended: no next iteration
            ctx = (frame, it + 1)
        for s, v in zip(node.out_slots, out, strict=True):
            if s >= 0:
                self.values[(s, ctx)] = v
                self._charge(node, s, ctx, v)
        if role in ("enter", "next"):
            self._start_iteration(ctx)
        self._deliver(node, ctx, out)

    def _charge(self, node: Any, s: int, ctx: tuple, v: Any) -> None:
        """Count a kept value's bytes against its device until its last read (an OOM is
        TF's ResourceExhaustedError), as the executor's other paths do."""
        nbytes = getattr(v, "nbytes", 0)
        if nbytes and v is not DEAD and self.plan.uses[s] and s not in self.fed:
            node.device.memory.alloc(nbytes, v.shape, v.dtype, node.name, node.device.name)
            self.charged[(s, ctx)] = (node.device.memory, nbytes)

    def _free(self, key: tuple) -> None:
        charged = self.charged.pop(key, None)
        if charged is not None:
            charged[0].free(charged[1])

    def release(self) -> None:
        """Return the bytes of every value still held (fetches, a Merge's unread inputs)."""
        for budget, nbytes in self.charged.values():
            budget.free(nbytes)
        self.charged.clear()

    def _frame(self, frame: tuple) -> list:
        """A frame's [started iterations, constant Enters, whether a live value entered]."""
        state = self.frames.get(frame)
        if state is None:
            state = self.frames[frame] = [[], [], False]
        return state

    def _constant(self, node: Any, child: tuple, out: tuple) -> None:
        s = node.out_slots[0]
        if s >= 0:
            self.constants[(child, s)] = out[0]
        state = self._frame(child)
        state[1].append((node, out))
        for it in state[0]:
            self._deliver(node, (child, it), out)

    def _start_iteration(self, ctx: tuple) -> None:
        state = self._frame(ctx[0])
        if ctx[1] in state[0]:
            return
        state[0].append(ctx[1])
        for node, out in state[1]:
            self._deliver(node, ctx, out)

    def _deliver(self, node: Any, ctx: tuple, out: tuple) -> None:
        info, nodes = self.info, self.plan.nodes
        node_dead = bool(out) and all(v is DEAD for v in out)
        dead_slots = {s for s, v in zip(node.out_slots, out, strict=True) if v is DEAD}
        for j in info.consumers[node.index]:
            ins = [s for s in nodes[j].in_slots if info.producer.get(s) == node.index]
            if not ins:
                dead = node_dead
            elif info.role[j] == "merge":     # a Merge takes any live input it gets
                dead = all(s in dead_slots for s in ins)
            else:
                dead = any(s in dead_slots for s in ins)
            self._arrive(j, ctx, dead)

    def _arrive(self, j: int, ctx: tuple, dead: bool) -> None:
        key = (j, ctx)
        st = self.arrived.get(key)
        if st is None:
            st = self.arrived[key] = [0, False, 0, False]
        if self.info.role[j] == "merge":
            if st[3]:
                return
            if dead:
                st[2] += 1
                if st[2] < self.info.forward_inputs[j]:
                    return
            st[3] = True
            self.ready.append(key)
            return
        st[0] += 1
        st[1] = st[1] or dead
        if st[0] == self.info.n_preds[j]:
            st[3] = True
            self.ready.append(key)




def run(step: Any, feeds: dict, as_error: Callable, timeout_s: float | None = None,
        cancelled: Callable[[], BaseException | None] = lambda: None) -> list:
    """Run ``step``'s plan (one with control flow) with ``feeds`` (slot -> value); returns
    the fetched values (None for ops). Every 256 nodes it checks ``cancelled()`` (an error
    ends the step) and the deadline ``timeout_s``."""
    deadline = None if not timeout_s else time.monotonic() + timeout_s
    r = _Run(step, feeds, as_error, deadline, cancelled)
    try:
        r.run()
        return _fetched(step, r)
    finally:
        r.release()


def _fetched(step: Any, r: _Run) -> list:
    """The fetched values of a finished run, in the root frame (a dead one is an error)."""
    fetched = []
    for k, s in enumerate(step.plan.fetch_slots):
        if s is None:
            fetched.append(None)
            continue
        v = r.lookup(s, (ROOT, 0))
        if v is DEAD or v is _MISSING:
            raise InvalidArgumentError(f"Retval[{k}] does not have value", hint=tr(
                "'{name}' has no value in this step: it is computed only in a tf.cond branch "
                "that was not taken, or inside a tf.while_loop; fetch the cond's or the "
                "loop's result instead.", name=step.plan.slot_names[s]))
        fetched.append(v)
    return fetched
