"""``ProbeEngine``: a worker without graph execution, for tests and benchmarks.

Servers run ``graph_engine.GraphEngine``; tests and benchmarks plug this one in
(``Server(engine_factory=...)``, ``TFTEACH_ENGINE="tfteach.distributed.engine.probe_engine:ProbeEngine"``)
to exercise the transport alone. It has the transport half of a worker
(``worker_transport.WorkerTransport``: the rendezvous behind RecvTensor, step cleanup),
GetStatus (one CPU device) and a few *probe graphs* that move tensors between tasks
without the graph runtime. Real graph execution (CreateSession, RunStep, other graphs)
answers UNIMPLEMENTED with a hint.

Probe graphs are JSON ``graph_def`` bytes:
- ``{"probe": "produce", "key": K, "shape": [...], "dtype": "float32", "value": 1.0}``:
  ``run_graph`` puts ``np.full(shape, value)`` in this task's rendezvous under ``K``;
- ``{"probe": "fetch", "peer": "host:port", "key": K, "shm": true, "timeout": 30}``:
  ``run_graph`` pulls ``K`` from the peer through RecvTensor and returns ``seconds``,
  ``nbytes`` and ``sum`` of what arrived;
- ``{"probe": "echo"}``: ``run_graph`` returns the feeds named in ``fetch_names``.
State: ``_graphs = {handle: probe dict}``, the rendezvous, ``_last_step``.
"""
from __future__ import annotations

import json
import secrets
import threading
import time
from typing import Any, Mapping, Sequence

import numpy as np

from tfteach import errors
from tfteach.distributed.client.stubs import WorkerClient
from tfteach.distributed.contract.engine_api import RunResult, TaskInfo
from tfteach.distributed.contract.worker_transport import WorkerTransport
from tfteach.i18n import tr

CPU_MEMORY_LIMIT = 256 << 20
_PROBES = ("produce", "fetch", "echo")


class ProbeEngine(WorkerTransport):
    """Worker transport without graph execution (see the module docstring)."""

    def __init__(self, task: TaskInfo) -> None:
        super().__init__(task)
        self._graphs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._last_step = 0
        self._incarnation = secrets.randbits(63)

    def __repr__(self) -> str:
        return f"ProbeEngine(task={self.task.task_name!r})"

    # -- worker role --------------------------------------------------------
    def get_status(self) -> list[dict[str, Any]]:
        return [{"name": f"{self.task.task_name}/device:CPU:0", "device_type": "CPU",
                 "memory_limit": CPU_MEMORY_LIMIT, "physical_device_desc": "",
                 "incarnation": self._incarnation}]

    def last_step(self) -> int:
        return self._last_step

    def register_graph(self, graph_def: bytes, config: bytes, session_handle: str) -> str:
        probe = _parse_probe(graph_def)
        if probe is None:
            raise self._no_engine("RegisterGraph")
        handle = secrets.token_hex(8)
        with self._lock:
            self._graphs[handle] = probe
        return handle

    def run_graph(self, graph_handle: str, step_id: int, feeds: Mapping[str, Any],
                  fetch_names: Sequence[str], options: bytes) -> RunResult:
        probe = self._graph(graph_handle)
        self._last_step = step_id
        try:
            if probe["probe"] == "produce":
                return self._produce(probe, step_id)
            if probe["probe"] == "fetch":
                return self._fetch(probe, step_id)
        except (KeyError, TypeError, ValueError) as exc:
            raise errors.InvalidArgumentError(
                f"Bad probe graph {probe!r} on task {self.task.task_name}: {exc}") from None
        return RunResult({name: feeds[name] for name in fetch_names if name in feeds})

    def deregister_graph(self, graph_handle: str) -> None:
        with self._lock:
            if self._graphs.pop(graph_handle, None) is None:
                raise self._unknown_graph(graph_handle)

    # -- master role ----------------------------------------------------------
    def create_session(self, graph_def: bytes, config: bytes) -> str:
        raise self._no_engine("CreateSession")

    def extend_session(self, session_handle: str, graph_def: bytes,
                       current_graph_version: int) -> int:
        raise self._no_engine("ExtendSession")

    def run_step(self, session_handle: str, feeds: Mapping[str, Any], fetches: Sequence[str],
                 targets: Sequence[str], options: bytes) -> RunResult:
        raise self._no_engine("RunStep")

    def close_session(self, session_handle: str) -> None:
        raise self._no_engine("CloseSession")

    def list_devices(self, session_handle: str) -> tuple[list[dict], list[dict]]:
        return self.get_status(), []

    def reset(self, containers: Sequence[str], device_filters: Sequence[str]) -> None:
        self.rendezvous.abort_all()

    def cancel_steps(self) -> None:
        self.rendezvous.abort_all(self.shutting_down())

    # -- probes and errors ----------------------------------------------------
    def _produce(self, probe: dict[str, Any], step_id: int) -> RunResult:
        value = np.full(tuple(probe.get("shape", ())), probe.get("value", 1.0),
                        dtype=probe.get("dtype", "float32"))
        self.put_tensor(step_id, str(probe["key"]), value)
        return RunResult({})

    def _fetch(self, probe: dict[str, Any], step_id: int) -> RunResult:
        peer = self.task.client.worker(str(probe["peer"]))
        start = time.perf_counter()
        value, _ = peer.recv_tensor(step_id, str(probe["key"]),
                                    timeout=float(probe.get("timeout", 30.0)),
                                    use_shm=bool(probe.get("shm", True)))
        seconds = time.perf_counter() - start
        return RunResult({"seconds": np.float64(seconds), "nbytes": np.int64(value.nbytes),
                          "sum": np.float64(value.sum(dtype=np.float64))})

    def _graph(self, graph_handle: str) -> dict[str, Any]:
        with self._lock:
            probe = self._graphs.get(graph_handle)
        if probe is None:
            raise self._unknown_graph(graph_handle)
        return probe

    def _unknown_graph(self, graph_handle: str) -> errors.OpError:
        return self.unknown_graph(graph_handle, tr("The task may have restarted since the "
                                                   "graph was registered; rerun the step."))

    def _no_engine(self, rpc: str) -> errors.OpError:
        return errors.UnimplementedError(
            f"{rpc} on task {self.task.task_name}: this server runs tfteach's probe engine "
            "(tests and benchmarks), which cannot execute graphs",
            hint=tr("Start the server without engine_factory or TFTEACH_ENGINE (the default "
                    "engine, graph_engine:GraphEngine, runs graphs)."))


def run_probe(worker: WorkerClient, step_id: int, probe: dict[str, Any]) -> dict[str, Any]:
    """Register ``probe`` on ``worker``, run it for ``step_id``, deregister; return fetches."""
    handle = worker.register_graph(json.dumps(probe).encode("utf-8"))
    try:
        tensors, _ = worker.run_graph(handle, step_id, fetch_names=["seconds", "nbytes", "sum"])
        return tensors
    finally:
        worker.deregister_graph(handle)


def _parse_probe(graph_def: bytes) -> dict[str, Any] | None:
    try:
        graph = json.loads(graph_def)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(graph, dict) and graph.get("probe") in _PROBES:
        return graph
    return None
