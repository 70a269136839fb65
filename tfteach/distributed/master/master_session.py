"""A master session: one client's graph, placed and run over the cluster's tasks.

State: the client's ``graph`` (extended by ExtendSession), ``config``, the tasks it talks to
(``targets``: task name -> address, chosen by ``device_filters``), their ``devices``, the
current ``placement`` and the graph version it was made for, ``pinned`` stateful placements,
``registered``: per (fetches, feeds, targets, phased) the worker graph handles of each part
(``retired``: those of earlier placements, deregistered when the session closes),
and ``reply_bytes``: per graph handle, the shared memory its answers need (``shm``).

A step: place (if the graph grew) -> partition (cached) -> RunGraph on every part under one
step id -> fetches + merged step stats (and, for ``output_partition_graphs``, every task's
graph per device, in a local session's format) + the placement log. The log goes back to
the client (which prints it, so it appears in the notebook) when the client's config asked
for it; when only the server's config did, this task prints it on its stderr, as TF's
master does. Steps of one session run concurrently (the lock guards placement and
registration only). A session with ``isolate_session_state`` registers its parts under its
``handle``: the tasks keep its variables and queues apart from every other session's.

An untraced step runs in phases (``phases.split_phases``): stage by stage on the calling
thread, this task's phase k, then the others' phases k (those needing nothing from it start
first), every tensor between two tasks (bar large ones between two others: ``phases``) in
RunGraph requests and answers. A traced step, one that asks for its partition graphs, or one
that cannot be cut into phases, runs every part at once, tensors crossing through RecvTensor
pulls, as TF does. Any failure aborts the step on every task it reached, and no session
sends a task a part of a later step before those aborts have ended there (``AbortsInFlight``).
"""
from __future__ import annotations

import functools
import json
import secrets
import sys
import threading
import time
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_calls
from typing import Any, Mapping, Sequence

from tfteach.distributed.client.waiting import wait_for_tasks
from tfteach.distributed.contract import modelled_network, step_args
from tfteach.distributed.contract.engine_api import RunResult, as_run_result, current_cancellation
from tfteach.distributed.contract.session_targets import RemoteDevice, cluster_targets, device_specs
from tfteach.distributed.contract.step_results import Gathered, root_cause
from tfteach.distributed.master.partition import Partitioner
from tfteach.distributed.master.phases import split_phases
from tfteach.errors import DeadlineExceededError
from tfteach.framework.device_spec import DeviceSpec
from tfteach.runtime import placer
from tfteach.runtime.plan import needed_ops
from tfteach.runtime.session import device_mapping_text
from tfteach.runtime.session_config import ConfigProto

ABORT_TIMEOUT_S = 10.0   # the deadline of the CleanupGraph calls that abort a failed step
CALL_GRACE_S = 0.5       # a RunGraph's deadline past the step's (the client waits 1 s more)


class MasterSession:
    """See the module docstring."""

    def __init__(self, engine: Any, graph: Any, config: ConfigProto, handle: str = "",
                 log_to_client: bool = True) -> None:
        self.engine = engine
        self.graph = graph
        self.config = config
        self.handle = handle
        self.log_to_client = log_to_client
        self.targets: dict[str, str] = {}
        self.devices: list = []
        self.placement: placer.Placement | None = None
        self.placed_version = -1
        self.pinned: dict[str, str] = {}
        self.registered: dict[tuple, list] = {}
        self.retired: list[list] = []          # parts registered for an earlier placement
        self.lock = threading.Lock()
        self.log: list[str] = []
        self.running: dict[int, list] = {}     # step id -> its registered parts
        self.reply_bytes: dict[str, int] = {}  # graph handle -> shm bytes its answers need

    # ---- CreateSession ---------------------------------------------------------------
    def connect(self) -> None:
        """Wait for the filtered tasks (TF's logged wait), then collect their devices."""
        me = self.engine.task
        self.targets = dict(cluster_targets(me, self.config.device_filters))
        others = [(n, a) for n, a in self.targets.items() if n != me.task_name]
        answers = wait_for_tasks(me.client, others, self.config.operation_timeout_in_ms or None)
        devices = [d for d in self.engine.devices if me.task_name in self.targets]
        for name, _ in others:
            devices += [RemoteDevice(a) for a in answers[name]["devices"]]
        filters = device_specs(self.config.device_filters)
        self.devices = [d for d in devices if not filters or any(f.compatible(d.spec)
                                                                 for f in filters)]
        if self.config.log_device_placement:
            self.log.append(device_mapping_text(self.devices))

    # ---- RunStep ----------------------------------------------------------------------
    def run(self, feeds: Mapping[str, Any], fetches: Sequence[str], targets: Sequence[str],
            options: dict) -> RunResult:
        with self.lock:
            self._place()
            fetch_t = step_args.fetches(self.graph, fetches)
            fed = step_args.feeds(self.graph, feeds)
            target_ops = step_args.targets(self.graph, targets)
            parts = self._register(fetch_t, fed, target_ops, not (
                options.get("trace") or options.get("partition_graphs")))
            log = self._client_log()
        step_id = secrets.randbits(62) or 1
        with self.lock:
            self.running[step_id] = parts
        cancellation = current_cancellation()
        if cancellation is not None:    # the client cancelled RunStep (Ctrl-C)
            cancellation.on_cancel(lambda: self._abort(parts, step_id))
        try:
            tensors, gathered = self._run_parts(parts, step_id, fed, options)
        finally:
            with self.lock:
                self.running.pop(step_id, None)
        for t, v in fed.items():
            if t.name in fetches:
                tensors[t.name] = v
        meta: dict = {"log": log} if log else {}
        if options.get("metadata", True):     # the client passed a RunMetadata
            meta["placement"] = {n: d.name for n, d in self.placement.devices.items()}
        gathered.fill(meta)
        return RunResult(tensors, json.dumps(meta).encode())

    def _client_log(self) -> list[str]:
        """The placement log lines gathered since the last step, for the client if it asked;
        otherwise (only the server's config asked) printed here, on this task's stderr."""
        log, self.log = self.log, []
        if log and not self.log_to_client:
            print("\n".join(log), file=sys.stderr, flush=True)
            return []
        return log

    def _place(self) -> None:
        if self.placed_version == self.graph.version:
            return
        me = self.engine.task
        ops = self.graph.get_operations()
        self.placement = placer.place(ops, self.devices, self.config.allow_soft_placement,
                                      self.pinned, DeviceSpec(me.job_name, 0, me.task_index))
        for op in ops:
            if op.op_def.stateful:
                self.pinned.setdefault(op.name, self.placement.devices[op.name].name)
        self.placed_version = self.graph.version
        self.retired.extend(self.registered.values())   # a running step may still use them
        self.registered.clear()
        if self.config.log_device_placement:
            self.log.extend(self.placement.log_lines())

    def _register(self, fetches: list, fed: dict, targets: list, phased: bool) -> list:
        """The registered parts of a step (cached): in phases unless ``phased`` is False
        (traced steps keep TF's RecvTensor transfers, which step stats show)."""
        key = (tuple(t.name for t in fetches), tuple(sorted(t.name for t in fed)),
               tuple(op.name for op in targets), phased)
        if key in self.registered:
            return self.registered[key]
        need = needed_ops([t.op for t in fetches if t not in fed] + targets, set(fed))
        ops = [op for op in self.graph.get_operations() if op._id in need]
        master = self.engine.task.task_name
        partitioner = Partitioner(self.placement.devices, self.targets, bypass_noops=phased)
        parts = partitioner.run(ops, set(fed), fetches, master=master)
        # A dead tensor cannot travel in a RunGraph request or answer: such a step pulls.
        phased = phased and not partitioner.may_be_dead
        split = split_phases(parts, master, partitioner.tensors, self._apart(parts)) \
            if phased else None
        registered = []
        isolate = self.config.isolate_session_state
        for part in split or parts.values():
            task = part.task
            worker = self._worker(task)
            config = json.dumps({"targets": part.targets(), "isolate": isolate}).encode()
            handle = worker.register_graph(json.dumps(part.graph_def()).encode(), config,
                                           self.handle if isolate else "")
            registered.append((task, worker, handle, part))
        self.registered[key] = registered
        return registered

    def _apart(self, parts: dict) -> frozenset:
        """The tasks of ``parts`` that did not prove they share this task's host."""
        client = self.engine.task.client
        return frozenset(task for task in parts if task != self.engine.task.task_name and
                         not client.route(self.targets[task]).shm_shared(wait=True))

    def _worker(self, task: str) -> Any:
        if task == self.engine.task.task_name:
            return _LocalWorker(self.engine)
        return self.engine.task.client.worker(self.targets[task], task)

    def _run_parts(self, parts: list, step_id: int, fed: dict, options: dict) -> tuple:
        """RunGraph on every part; the first failure aborts the step on every part.
        Unphased: remote parts in flight on pool threads, this task's part on the calling
        thread. Phased: stage by stage on the calling thread (this task's phase k, then
        the other tasks' phases k, all but one of those on pool threads), so a step with
        one other task hands nothing to another thread."""
        asked_ms = options.get("timeout_in_ms") or self.config.operation_timeout_in_ms
        timeout_s = (asked_ms or 60000) / 1000
        opts = {first: _graph_options(bool(options.get("trace")), timeout_s, first,
                                      bool(options.get("partition_graphs")),
                                      self.engine.task.task_name)
                for first in (True, False)}
        calls = []
        for _, worker, handle, part in parts:
            feeds = {ph: fed[self.graph.get_tensor_by_name(src)] for ph, src in part.feeds.items()}
            if asked_ms and not isinstance(worker, _LocalWorker):
                worker = _WithDeadline(worker, timeout_s)
            calls.append((part, (worker, handle, step_id, feeds, part.fetches,
                                 opts[part.first])))
        run = self._run_staged if any(part.phased for _, _, _, part in parts) \
            else self._run_concurrently
        futures = run(calls, _Aborter(self, parts, step_id), timeout_s)
        return self._collect(parts, step_id, futures, Gathered(options))

    def _run_concurrently(self, calls: list, aborter: "_Aborter", timeout_s: float) -> list:
        futures, local = [], []
        for part, call in calls:
            if isinstance(call[0], _LocalWorker):
                local.append((part, call))
                continue
            futures.append(self._start_remote(part, timeout_s, call))
            futures[-1].add_done_callback(aborter.on_done)
        carried: dict = {}
        for part, call in local:
            futures.append(_run_here(self._run_local, part, carried, timeout_s, *call))
            if aborter.on_done(futures[-1]):
                break
        return futures

    def _run_staged(self, calls: list, aborter: "_Aborter", timeout_s: float) -> list:
        futures: list = []
        carried: dict = {}
        for k in range(1 + max(part.phase for part, _ in calls)):
            stage = [(p, c) for p, c in calls if p.phase == k]
            local = [(p, c) for p, c in stage if isinstance(c[0], _LocalWorker)]
            early, remote = _independent(local, [(p, c) for p, c in stage
                                                 if not isinstance(c[0], _LocalWorker)])
            started = [self._start_remote(p, timeout_s, c) for p, c in early]
            for part, call in local:
                futures.append(_run_here(self._run_local, part, carried, timeout_s, *call))
                if aborter.on_done(futures[-1]):
                    return futures + started
            started += [self._start_remote(p, timeout_s, c) for p, c in remote[1:]]
            for fut in started:     # a failure aborts the others at once
                fut.add_done_callback(aborter.on_done)
            if remote:
                started.append(_run_here(self._call_remote, remote[0][0], timeout_s,
                                         remote[0][1]))
                aborter.on_done(started[-1])
            futures.extend(started)
            for fut in started:
                fut.exception()     # waits for it
            if aborter.aborted:
                return futures
        return futures

    def _run_local(self, part: Any, carried: dict, timeout_s: float, worker: Any, handle: str,
                   step_id: int, feeds: dict, fetches: list, opts: bytes) -> tuple:
        """One of this task's phases, on the calling thread: fed what the tasks answered
        (``part.inputs``, from the rendezvous) and what earlier phases computed
        (``carried``), it returns its fetches and leaves what later phases use in
        ``carried``."""
        self._take_inputs(part, step_id, feeds, timeout_s)
        self.engine.aborts.wait(part.task, min(timeout_s, ABORT_TIMEOUT_S))
        feeds.update((placeholder, carried[t]) for placeholder, t in part.carried.items())
        tensors, meta = worker.run_graph(handle, step_id, feeds, fetches + part.carry_out, opts)
        for t in part.carry_out:
            carried[t] = tensors[t] if t in fetches else tensors.pop(t)
        return tensors, meta

    def _take_inputs(self, part: Any, step_id: int, feeds: dict, timeout_s: float) -> None:
        """Feed ``part`` the tensors it waits for (``part.inputs``: placeholder ->
        rendezvous key), taken from this task's rendezvous, once they would have crossed a
        modelled network (``LocalCluster(network=...)``)."""
        for placeholder, key in part.inputs.items():
            feeds[placeholder] = self.engine.rendezvous.recv(step_id, key, timeout_s)[0]
        if part.inputs and modelled_network.modelled():
            modelled_network.hold_inputs([(key, feeds[p]) for p, key in part.inputs.items()],
                                         part.task, timeout_s)

    def _start_remote(self, part: Any, timeout_s: float, call: tuple) -> Future:
        """``_call_remote`` on a pool thread; its outcome as a Future."""
        out: Future = Future()

        def run() -> None:
            try:
                out.set_result(self._call_remote(part, timeout_s, call))
            except BaseException as e:  # noqa: BLE001 (reported through the future)
                out.set_exception(e)
        self.engine.pool.submit(run)
        return out

    def _call_remote(self, part: Any, timeout_s: float, call: tuple) -> tuple:
        """RunGraph on another task, as a blocking call once this task's part has sent the
        tensors the part needs (``part.inputs``: placeholder -> rendezvous key; they go in
        the request with the client's feeds). What the part sent to this task goes in our
        rendezvous; returns (tensors, metadata)."""
        worker, handle, step_id, feeds, fetches, opts = call
        self._take_inputs(part, step_id, feeds, timeout_s)
        self.engine.aborts.wait(part.task, min(timeout_s, ABORT_TIMEOUT_S))
        result = worker.run_partition(handle, step_id, feeds, fetches, opts,
                                      reply_bytes=self.reply_bytes.get(handle, 0))
        self.reply_bytes[handle] = result.shm_bytes
        for key, value in result.sent.items():
            self.engine.put_tensor(step_id, key, value)
        if modelled_network.modelled():
            modelled_network.hold([(part.task, v) for v in result.tensors.values()],
                                  self.engine.task.task_name, timeout_s)
        return result.tensors, result.metadata

    def _collect(self, parts: list, step_id: int, futures: list,
                 gathered: Gathered) -> tuple:
        tensors: dict = {}
        failures = []
        for fut in futures:
            try:
                out, meta = fut.result()
                tensors.update(out)
                gathered.add(meta)
            except Exception as e:  # noqa: BLE001 (the step fails with the root cause)
                failures.append(e)
        if failures:   # on success every Send was received: nothing is left to clean up
            cause = root_cause(failures)
            if not isinstance(cause, DeadlineExceededError):   # a frozen task never answers:
                self._cleanup(parts, step_id)                  # the abort's calls clean up
            raise cause
        return tensors, gathered

    def _abort(self, parts: list, step_id: int) -> None:
        for task, worker in _workers(parts).items():
            self.engine.aborts.add(task, self.engine.pool.submit(
                _quietly, worker.cleanup_graph, step_id, ABORT_TIMEOUT_S))

    def _cleanup(self, parts: list, step_id: int) -> None:
        for worker in _workers(parts).values():
            _quietly(worker.cleanup_graph, step_id)

    def cancel_running(self) -> None:
        """Abort every step of this session that is running now (the session is closing):
        each part is cleaned up, which ends its waits (RecvTensor, queues, accumulators)
        with an error. A step whose RunStep call is cancelled (Ctrl-C) is aborted alone,
        through the call's ``Cancellation``."""
        with self.lock:
            running = list(self.running.items())
        for step_id, parts in running:
            self._abort(parts, step_id)

    def close(self) -> None:
        self.cancel_running()
        for registered in [*self.registered.values(), *self.retired]:
            for _, worker, handle, _ in registered:
                _quietly(worker.deregister_graph, handle)
        self.registered.clear()
        self.retired.clear()


class _LocalWorker:
    """This task's own worker role, called directly (no RPC) with the client's signature."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def register_graph(self, graph_def: bytes, config: bytes, session_handle: str) -> str:
        return self.engine.register_graph(graph_def, config, session_handle)

    def run_graph(self, handle: str, step_id: int, feeds: dict, fetches: list,
                  options: bytes) -> tuple:
        result = as_run_result(self.engine.run_graph(handle, step_id, feeds, fetches, options))
        return dict(result.tensors), result.metadata

    def cleanup_graph(self, step_id: int, timeout: float | None = None) -> None:
        self.engine.cleanup_graph(step_id)

    def deregister_graph(self, handle: str) -> None:
        self.engine.deregister_graph(handle)


class _WithDeadline:
    """A remote task's worker whose RunGraph calls carry the step's deadline (the learner's
    ``RunOptions.timeout_in_ms`` or ``operation_timeout_in_ms``), as TF's master sets its
    calls' deadline: a task that stopped answering (SIGSTOP, a debugger) fails the step
    with DeadlineExceededError naming it instead of holding it forever. The deadline falls
    ``CALL_GRACE_S`` after the step's, so a task that answers reports its own timeout (which
    says what it waited for) first, and before the client's own (``DEADLINE_GRACE_S``)."""

    def __init__(self, worker: Any, timeout_s: float) -> None:
        self.worker, self.deadline = worker, time.monotonic() + timeout_s + CALL_GRACE_S

    def run_partition(self, *args: Any, **kwargs: Any) -> Any:
        left = max(0.0, self.deadline - time.monotonic())
        return self.worker.run_partition(*args, timeout=left, **kwargs)


class _Aborter:
    """Aborts a step on every part, once, at its first failed part."""

    def __init__(self, session: MasterSession, parts: list, step_id: int) -> None:
        self.session, self.parts, self.step_id = session, parts, step_id
        self.aborted = False
        self._lock = threading.Lock()

    def on_done(self, fut: Any) -> bool:
        """Abort if ``fut`` (finished) failed; whether the step is aborted."""
        if fut.exception() is not None:
            with self._lock:
                first, self.aborted = not self.aborted, True
            if first:
                self.session._abort(self.parts, self.step_id)
        return self.aborted


class AbortsInFlight:
    """A task's abort calls (CleanupGraph) in flight, per task: every session of the
    master sends a task a part only once those to it have ended, so a step aborted there
    (a client gone, a failed part) can no longer take what a later step gives it (a queue
    element). State: task name -> its calls' futures, under one lock."""

    def __init__(self) -> None:
        self._calls: dict[str, set[Future]] = {}
        self._lock = threading.Lock()

    def add(self, task: str, call: Future) -> None:
        with self._lock:
            self._calls.setdefault(task, set()).add(call)
        call.add_done_callback(lambda done: self._forget(task, done))

    def _forget(self, task: str, call: Future) -> None:
        with self._lock:
            calls = self._calls.get(task, set())
            calls.discard(call)
            if not calls:
                self._calls.pop(task, None)

    def wait(self, task: str, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until the abort calls to ``task`` have ended."""
        if not self._calls:         # (every step asks: none in flight costs no lock)
            return
        with self._lock:
            calls = list(self._calls.get(task, ()))
        if calls:
            wait_for_calls(calls, timeout=timeout_s)


def _independent(local: list, remote: list) -> tuple[list, list]:
    """A stage's ``remote`` calls split into those needing nothing its ``local`` phases
    send (they start first and run while this task computes; none without local phases)
    and the others."""
    sent = {n.key for part, _ in local for n in part.nodes if n.op == "_Send"}
    early = [c for c in remote if local and sent.isdisjoint(c[0].inputs.values())]
    return early, [c for c in remote if not any(c is e for e in early)]


def _workers(parts: list) -> dict:
    """One worker per task of the registered ``parts`` (a task may run several phases)."""
    return {task: worker for task, worker, _, _ in parts}


def _run_here(fn: Any, *args: Any) -> "_Finished":
    """Call ``fn(*args)`` on this thread; its outcome as a finished future."""
    try:
        return _Finished(fn(*args), None)
    except Exception as e:  # noqa: BLE001 (reported through the future)
        return _Finished(None, e)


class _Finished:
    """The outcome of a call made on this thread, read as a finished ``Future`` is
    (``result``, ``exception``, ``add_done_callback``), without the Future's condition
    variable: a step makes one for each of its phases here."""

    __slots__ = ("_value", "_error")

    def __init__(self, value: Any, error: BaseException | None) -> None:
        self._value, self._error = value, error

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def exception(self) -> BaseException | None:
        return self._error

    def add_done_callback(self, fn: Any) -> None:
        fn(self)


@functools.lru_cache(maxsize=64)
def _graph_options(trace: bool, timeout_s: float, first: bool, graphs: bool,
                   master: str) -> bytes:
    """RunGraph's options (``first``: the step's first phase on that task; ``graphs``: answer
    the partition graphs; ``master``: the task running the step, whose gradients an
    accumulator records)."""
    return json.dumps({"trace": trace, "timeout_s": timeout_s, "first": first,
                       "partition_graphs": graphs, "master": master}).encode()


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 (cleanup of a task that may be gone)
        pass
