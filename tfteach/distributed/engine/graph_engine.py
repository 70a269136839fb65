"""``GraphEngine``: the engine every tfteach server runs, worker and master in one.

Worker role (TF's WorkerService): the task's devices (its own config and environment), the
task's resource containers that outlive sessions (``CleanupAll`` clears the named ones, or
the default one), a rendezvous for ``_Send``, ``pull`` for ``_Recv`` tensors
(RecvTensorInline calls in flight; a pool for local waits and streams), and registered
partitions run by the core executor. A partition registered for a session with
``isolate_session_state`` uses that session's own containers, released with its last
partition. Steps of one partition run concurrently, as in TF: each running step takes a
slot (its own ``StepResources`` and plans), so a step blocked in a queue never holds up
another.

Master role (TF's MasterService): sessions over the whole cluster. CreateSession merges the
server's config into the session's (TF's ``MergeFrom``), waits for the tasks
(``device_filters`` decide which), collects their devices, and keeps the client's graph.
RunStep places the whole graph on all those devices (ops with no device go to this task),
partitions the needed ops by task (``partition``), registers each part with its worker
(cached per fetch/feed/target set and graph version), runs them under one step id (in
phases, stage by stage, when untraced: see ``master``), and returns the fetches with merged
step stats and placement log. A failed part, a cancelled RunStep (Ctrl-C) or a closed
session aborts the step everywhere, so no task is left waiting; a stopping server aborts
every step running on its task (``cancel_steps``).
"""
from __future__ import annotations

import contextlib
import json
import secrets
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from tfteach import errors
from tfteach.devices import discovery
from tfteach.devices.base import Device
from tfteach.distributed.contract import step_args, transport_ops
from tfteach.distributed.contract.engine_api import RunResult, TaskInfo
from tfteach.distributed.contract.engine_args import (
    json_object,
    load_graph,
    merge_config,
    parse_options,
    session_config,
    task_config,
)
from tfteach.distributed.contract.session_targets import cluster_targets, device_attrs
from tfteach.distributed.contract.sync_stall import explain_timeout
from tfteach.distributed.contract.worker_transport import WorkerTransport
from tfteach.distributed.master.master_session import AbortsInFlight, MasterSession
from tfteach.framework.graph import Graph
from tfteach.framework.graph_io import copy_graph
from tfteach.i18n import tr
from tfteach.ops.control_flow_ops import DEAD
from tfteach.runtime.executor import Executor, to_fetch_value
from tfteach.runtime.partition_graphs import partition_graphs
from tfteach.runtime.plan import build_plan
from tfteach.runtime.resources import ResourceMgr
from tfteach.runtime.session_config import StepStats, TransferStats

SWITCH_INTERVAL_S = 0.0002


class _FastSwitching:
    """The GIL switch interval while any engine of this process is open.

    A task juggles gRPC, pool and device threads; Python's default 5 ms switch interval
    would add up to 5 ms to every hand-off between them. The interval is process-wide, so
    it is set while engines live and put back when the last one closes: a Server in a
    notebook kernel leaves the kernel as it found it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines = 0
        self._before = sys.getswitchinterval()

    def hold(self) -> None:
        with self._lock:
            if self._engines == 0:
                self._before = sys.getswitchinterval()
                sys.setswitchinterval(SWITCH_INTERVAL_S)
            self._engines += 1

    def release(self) -> None:
        with self._lock:
            self._engines -= 1
            if self._engines == 0:
                sys.setswitchinterval(self._before)


_fast_switching = _FastSwitching()
RECV_GRACE_S = 1.0      # a Recv from another task waits this much beyond the step's timeout


class _Slot:
    """What one running step of a partition owns: its kernels' view of the containers
    and of the task's rendezvous (step id, outbox) and the plans bound to that view."""

    def __init__(self, engine: "GraphEngine", mgr: ResourceMgr) -> None:
        rendezvous = transport_ops.StepRendezvous(engine.rendezvous, engine.pull,
                                                  engine.task.task_name)
        self.resources = transport_ops.StepResources(rendezvous, mgr)
        self.plans: dict[tuple, Any] = {}


class _Partition:
    """A registered graph partition on this worker; ``session``: the isolated session it
    belongs to ("" when it uses the task's containers)."""

    def __init__(self, engine: "GraphEngine", graph: Graph, targets: list[str],
                 mgr: ResourceMgr, session: str) -> None:
        self.engine = engine
        self.graph = graph
        self.targets = [graph.get_operation_by_name(n) for n in targets]
        self.devices = {op.name: engine.device(op.device, op) for op in graph.get_operations()}
        self.mgr = mgr
        self.session = session
        self._idle: list[_Slot] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def slot(self) -> Iterator[_Slot]:
        """An idle slot for one step (a new one when every slot is running a step)."""
        with self._lock:
            slot = self._idle.pop() if self._idle else None
        if slot is None:
            slot = _Slot(self.engine, self.mgr)
        try:
            yield slot
        finally:
            with self._lock:
                self._idle.append(slot)


class GraphEngine(WorkerTransport):
    """Worker and master roles of one task (see the module docstring)."""

    def __init__(self, task: TaskInfo) -> None:
        super().__init__(task)
        _fast_switching.hold()
        self._switching = True
        cfg = task_config(task.config)
        self.devices = discovery.local_devices(task.job_name, task.task_index,
                                               cfg.device_count, cfg.gpu_options)
        self._by_name = {d.name: d for d in self.devices}
        self.config = cfg
        self.resources = ResourceMgr()
        self._isolated: dict[str, ResourceMgr] = {}    # isolated session -> its containers
        self.executor = Executor()
        self.pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="tfteach-rpc")
        self.aborts = AbortsInFlight()      # the masters' abort calls, per task
        self._parts: dict[str, _Partition] = {}
        self._sessions: dict[str, "MasterSession"] = {}
        self._steps = 0
        self._running: dict[int, int] = {}      # step id -> its partitions running here
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GraphEngine(task={self.task.task_name!r}, devices={len(self.devices)})"

    # ---- worker role ------------------------------------------------------------------
    def device(self, name: str, op: Any = None) -> Device:
        dev = self._by_name.get(name)
        if dev is None:
            raise errors.InvalidArgumentError(
                f"Operation '{getattr(op, 'name', '?')}' was assigned to {name}, which is not a "
                f"device of task {self.task.task_name} (it has "
                f"{', '.join(sorted(self._by_name))})",
                hint=tr("the task's devices changed since the session placed the graph (was "
                        "it restarted with other settings?); create a new session."))
        return dev

    def get_status(self) -> list[dict[str, Any]]:
        return [device_attrs(d) for d in self.devices]

    def last_step(self) -> int:
        return self._steps

    def running_steps(self) -> list[int]:
        """The ids of the steps that have a partition running on this task now."""
        with self._lock:
            return sorted(self._running)

    def register_graph(self, graph_def: bytes, config: bytes, session_handle: str) -> str:
        where = f"RegisterGraph on {self.task.task_name}"
        spec = json_object(config, f"{where}: config")
        graph = load_graph(graph_def, where)
        target_names = spec.get("targets", [])
        if not isinstance(target_names, list):
            raise errors.InvalidArgumentError(f"{where}: config's targets are not a list")
        targets = step_args.targets(graph, target_names)
        session = session_handle if spec.get("isolate") else ""
        with self._lock:
            mgr = self._isolated.setdefault(session, ResourceMgr()) if session else self.resources
        part = _Partition(self, graph, [op.name for op in targets], mgr, session)
        handle = secrets.token_hex(8)
        with self._lock:
            self._parts[handle] = part
        return handle

    def run_graph(self, graph_handle: str, step_id: int, feeds: Mapping[str, Any],
                  fetch_names: Sequence[str], options: bytes) -> RunResult:
        part = self._part(graph_handle)
        opts = parse_options(options)
        fetches = step_args.fetches(part.graph, fetch_names)
        fed = step_args.feeds(part.graph, feeds)
        with part.slot() as slot, self._running_step(step_id):
            plan = self._plan(part, slot, fetches, fed)
            sent = slot.resources.rendezvous.begin(step_id, float(opts.get("timeout_s", 60.0)))
            slot.resources.caller = str(opts.get("master", ""))
            values = {plan.feed_slots[t]: part.devices[t.op.name].from_host(v)
                      for t, v in fed.items()}
            try:
                raw, stats = self.executor.run(plan, values, slot.resources,
                                               trace=bool(opts.get("trace")),
                                               timeout_s=slot.resources.timeout_s,
                                               step_id=step_id, timeout_ends_step=False)
            except errors.DeadlineExceededError as e:   # a sync step lacking gradients?
                raise explain_timeout(e, part.mgr, self.task.cluster) from None
        self._steps += bool(opts.get("first", True))     # a step's later phases: the same step
        out = {t.name: to_fetch_value(v, part.devices[t.op.name], t.is_ref, t.op)
               for t, v in zip(fetches, raw, strict=True)}
        meta: dict = {}
        if stats:
            meta["step_stats"] = _with_transfers(stats, part.graph).to_dict()
        if opts.get("partition_graphs"):
            meta["partition_graphs"] = [g.to_dict() for g in partition_graphs(plan)]
        return RunResult({k: np.asarray(v) for k, v in out.items()},
                         json.dumps(meta).encode() if meta else b"", sent)

    @contextlib.contextmanager
    def _running_step(self, step_id: int) -> Iterator[None]:
        with self._lock:
            self._running[step_id] = self._running.get(step_id, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._running[step_id] -= 1
                if not self._running[step_id]:
                    del self._running[step_id]

    def _plan(self, part: _Partition, slot: _Slot, fetches: list, fed: dict) -> Any:
        key = (tuple(t.name for t in fetches), tuple(sorted(t.name for t in fed)))
        plan = slot.plans.get(key)
        if plan is None:
            plan = build_plan(part.graph.get_operations(), part.devices, fetches,
                              part.targets, list(fed), slot.resources)
            slot.plans[key] = plan
        return plan

    def _part(self, handle: str) -> _Partition:
        part = self._parts.get(handle)
        if part is None:
            raise self.unknown_graph(handle, tr(
                "the task restarted since the session registered its graph; create a new "
                "tf.Session (it registers the graph again)."))
        return part

    def pull(self, step_id: int, attrs: dict, device: Device, pending: Any,
             timeout: float) -> None:
        """Resolve ``pending`` with a ``_Recv``'s tensor. From this task's rendezvous
        (the sender is here, or the master delivers it: ``via_master``) a pool thread
        waits; from another task a RecvTensorInline call is put in flight and its answer
        resolves ``pending`` on gRPC's thread (a tensor left to stream streams on a pool
        thread; one of ``bulk.MIN_BYTES`` or more from a task whose bulk port is known is
        asked for there at once, its answer awaited on a pool thread). A cancelled step
        cancels the call (a bulk request ends when the sender aborts the step). A tensor
        from another task is awaited ``RECV_GRACE_S`` beyond the step's timeout: its sender
        enforces that timeout itself, and the sender's error says what it waited for (a
        queue, an accumulator)."""
        def resolve(get_value: Callable[[], tuple]) -> None:
            try:
                value, is_dead = get_value()
                pending.resolve(DEAD if is_dead else device.from_host(np.asarray(value)))
            except BaseException as e:  # noqa: BLE001 (reported through the step)
                pending.resolve(error=e)

        key = attrs["key"]
        if attrs["src_task"] != self.task.task_name:
            timeout += RECV_GRACE_S
        if attrs["src_task"] == self.task.task_name or attrs.get("via_master"):
            self.pool.submit(resolve, lambda: self.rendezvous.recv(step_id, key, timeout))
            return
        worker = self.task.client.worker(attrs["src_address"], attrs["src_task"])
        port = worker.bulk_port(_static_bytes(attrs))
        if port:        # a large tensor from a task of another host: one round trip
            self.pool.submit(resolve, worker.recv_bulk(step_id, key, timeout, port))
            return
        call = worker.start_recv(step_id, key, timeout, reply_bytes=_static_bytes(attrs))
        pending.on_cancel = call.cancel

        def answered(call: Any) -> None:
            get = lambda: worker.recv_result(call, step_id, timeout)  # noqa: E731
            if worker.recv_streams(call):
                self.pool.submit(resolve, get)
            else:
                resolve(get)
        call.add_done_callback(answered)

    def cleanup_graph(self, step_id: int) -> None:
        """Abort step ``step_id`` here (its waits end with AbortedError) and forget it."""
        error = errors.AbortedError(f"Step {step_id} was aborted on {self.task.task_name}")
        self.rendezvous.abort_step(step_id, error)
        self.executor.cancel(step_id, error)      # its waiting kernels: on_cancel
        super().cleanup_graph(step_id)

    def deregister_graph(self, graph_handle: str) -> None:
        """Drop a partition; the last one of an isolated session releases its containers."""
        with self._lock:
            part = self._parts.pop(graph_handle, None)
            session = part.session if part is not None else ""
            last = session and not any(p.session == session for p in self._parts.values())
            mgr = self._isolated.pop(session, None) if last else None
        if mgr is not None:
            mgr.clear()

    def cleanup_all(self, containers: Sequence[str]) -> None:
        """TF's CleanupAll: clear the named containers of this task (the default container
        when none is named)."""
        super().cleanup_all(containers)
        self.resources.clear(list(containers) or [""])

    # ---- master role ------------------------------------------------------------------
    def create_session(self, graph_def: bytes, config: bytes) -> str:
        cfg = session_config(config)
        graph = load_graph(graph_def, "CreateSession")
        handle = secrets.token_hex(8)
        sess = MasterSession(self, graph, merge_config(cfg, self.config),
                             f"{self.task.task_name}/{handle}", cfg.log_device_placement)
        sess.connect()
        with self._lock:
            self._sessions[handle] = sess
        return handle

    def extend_session(self, session_handle: str, graph_def: bytes,
                       current_graph_version: int) -> int:
        """Extend the session's graph, all or nothing: the nodes are added to a copy, which
        replaces the graph only if every node was valid."""
        sess = self._session(session_handle)
        with sess.lock:
            if current_graph_version != sess.graph.version:
                raise errors.FailedPreconditionError(
                    f"Graph version {current_graph_version} does not match the session's "
                    f"{sess.graph.version}", hint=tr("create a new session."))
            sess.graph = load_graph(graph_def, "ExtendSession", copy_graph(sess.graph))
            return sess.graph.version

    def run_step(self, session_handle: str, feeds: Mapping[str, Any], fetches: Sequence[str],
                 targets: Sequence[str], options: bytes) -> RunResult:
        return self._session(session_handle).run(feeds, fetches, targets,
                                                 parse_options(options))

    def close_session(self, session_handle: str) -> None:
        with self._lock:
            sess = self._sessions.pop(session_handle, None)
        if sess is not None:
            sess.close()

    def list_devices(self, session_handle: str) -> tuple[list[dict], list[dict]]:
        sess = self._sessions.get(session_handle)
        remote = [device_attrs(d) for d in sess.devices if d.name not in self._by_name] if sess else []
        return self.get_status(), remote

    def reset(self, containers: Sequence[str], device_filters: Sequence[str]) -> None:
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for s in sessions:
            s.close()
        for name, address in cluster_targets(self.task, list(device_filters)):
            if name == self.task.task_name:
                self.cleanup_all(containers)
            else:
                try:
                    self.task.client.worker(address, name).cleanup_all(containers)
                except errors.UnavailableError:
                    pass

    def cancel_steps(self) -> None:
        """Abort every step running on this task now (the server is stopping): the steps
        this task is master of, everywhere, and every part running here, whose waits
        (queues, accumulators, tensors) end with CancelledError at once."""
        with self._lock:
            sessions, steps = list(self._sessions.values()), list(self._running)
        for sess in sessions:
            sess.cancel_running()
        error = self.shutting_down()
        for step_id in steps:
            self.rendezvous.abort_step(step_id, error)
            self.executor.cancel(step_id, error)

    def close(self) -> None:
        super().close()
        self.executor.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self._switching:
            self._switching = False
            _fast_switching.release()

    def _session(self, handle: str) -> Any:
        sess = self._sessions.get(handle)
        if sess is None:
            raise errors.AbortedError(f"Session {handle} is not found on "
                                      f"{self.task.task_name}",
                                      hint=tr("the master task restarted or the session "
                                              "was closed; create a new session."))
        return sess


def _static_bytes(attrs: dict) -> int:
    """The size of a ``_Recv``'s tensor from its static shape (0 if not fully known)."""
    dims = attrs["shape"].as_list() if attrs["shape"].dims is not None else None
    if dims is None or None in dims or attrs["dtype"].size <= 0:
        return 0
    return int(np.prod(dims, dtype=np.int64)) * attrs["dtype"].size


def _with_transfers(stats: StepStats, graph: Graph) -> StepStats:
    """Report each finished ``_Recv`` as a cross-task transfer (and hide ``_Send``)."""
    for ds in stats.dev_stats:
        keep = []
        for n in ds.node_stats:
            if n.op == "_Recv":
                attrs = graph.get_operation_by_name(n.node_name).attrs
                stats.transfers.append(TransferStats(
                    attrs["tensor"], attrs["src_device"], ds.device, attrs["tensor"].split(":")[0],
                    n.node_name, n.all_start_micros, n.all_end_rel_micros, n.output_bytes))
            elif n.op != "_Send":
                keep.append(n)
        ds.node_stats = keep
    return stats
