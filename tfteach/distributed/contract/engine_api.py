"""The interface between the gRPC services and the graph engine that does the work.

Servicers are thin: each RPC decodes its request, calls one ``Engine`` method and encodes
the result. Engines raise ``tfteach.errors.OpError`` subclasses; the services turn them
into gRPC statuses and clients turn them back (``status``). A server obtains its engine
from a factory, ``factory(task: TaskInfo) -> Engine``, chosen in this order:
``Server(engine_factory=...)``, env ``TFTEACH_ENGINE="module:attr"``, ``set_engine_factory``,
``DEFAULT_ENGINE``.

Device attribute dicts (``get_status``, ``list_devices``) have the keys ``name``
(``/job:J/replica:0/task:T/device:CPU:0``), ``device_type``, ``memory_limit``,
``physical_device_desc`` and ``incarnation``.
"""
from __future__ import annotations

import importlib
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence, Union

if TYPE_CHECKING:
    import numpy as np

    from tfteach.distributed.protocol.cluster_spec import ClusterSpec

ENGINE_ENV = "TFTEACH_ENGINE"
DEFAULT_ENGINE = "tfteach.distributed.engine.graph_engine:GraphEngine"


class Peers(Protocol):
    """What an engine needs of the client that reaches the other tasks (ClusterClient is one):
    the WorkerService calls of the task at an address."""

    def worker(self, address: str, task_name: str | None = None) -> Any:
        """Typed WorkerService calls to the task at ``address``."""


@dataclass(frozen=True)
class TaskInfo:
    """Who the engine serves: the cluster, this task, and a client to reach the others."""

    cluster: "ClusterSpec"
    job_name: str
    task_index: int
    address: str                    # this task's real host:port (port 0 resolved)
    config: Any = None              # Server(config=...): the default session config
    client: "Peers | None" = field(default=None, repr=False, compare=False)

    @property
    def task_name(self) -> str:
        """``/job:J/replica:0/task:T``."""
        return f"/job:{self.job_name}/replica:0/task:{self.task_index}"


@dataclass
class RunResult:
    """What ``run_graph``/``run_step`` return: fetched tensors and opaque run metadata;
    for ``run_graph``, also the values of the partition's sends addressed to the master
    (``sent``: rendezvous key -> array)."""

    tensors: "Mapping[str, np.ndarray]"
    metadata: bytes = b""
    sent: "Mapping[str, np.ndarray]" = field(default_factory=dict)
    shm_bytes: int = 0          # how much of ``sent`` came through shared memory


RunOutput = Union[RunResult, "Mapping[str, np.ndarray]"]


class WorkerEngine(Protocol):
    """The worker role (TF's WorkerService): run graph partitions, exchange tensors."""

    def get_status(self) -> list[dict[str, Any]]:
        """Attributes of this task's devices."""

    def last_step(self) -> int:
        """The id of the last step this task ran (0 before the first)."""

    def register_graph(self, graph_def: bytes, config: bytes, session_handle: str) -> str:
        """Keep a graph partition; return its handle."""

    def run_graph(self, graph_handle: str, step_id: int, feeds: "Mapping[str, np.ndarray]",
                  fetch_names: Sequence[str], options: bytes) -> RunOutput:
        """Run a registered partition for step ``step_id``."""

    def cleanup_graph(self, step_id: int) -> None:
        """Forget the per-step state of ``step_id`` (its rendezvous entries)."""

    def deregister_graph(self, graph_handle: str) -> None:
        """Drop a registered partition."""

    def cleanup_all(self, containers: Sequence[str]) -> None:
        """Reset resource containers (all of them when ``containers`` is empty)."""

    def put_tensor(self, step_id: int, key: str, value: "np.ndarray",
                   is_dead: bool = False) -> None:
        """Send side of the rendezvous: leave a tensor for ``key``."""

    def recv_tensor(self, step_id: int, key: str,
                    timeout: float) -> "tuple[np.ndarray, bool]":
        """Receive side: wait at most ``timeout`` s for ``key``; return (value, is_dead)."""


class MasterEngine(Protocol):
    """The master role (TF's MasterService): sessions over the whole cluster."""

    def create_session(self, graph_def: bytes, config: bytes) -> str:
        """Start a session on ``graph_def`` (graph version 0); return its handle."""

    def extend_session(self, session_handle: str, graph_def: bytes,
                       current_graph_version: int) -> int:
        """Add nodes to a session's graph; return the new graph version."""

    def run_step(self, session_handle: str, feeds: "Mapping[str, np.ndarray]",
                 fetches: Sequence[str], targets: Sequence[str], options: bytes) -> RunOutput:
        """Run one step: feed, run the targets, return the fetches. During the call,
        ``current_cancellation()`` is the call's ``Cancellation`` (its client may cancel)."""

    def close_session(self, session_handle: str) -> None:
        """Release a session, aborting its running steps (variables stay in their
        containers, as in TF)."""

    def list_devices(self, session_handle: str
                     ) -> "tuple[list[dict[str, Any]], list[dict[str, Any]]]":
        """``(local devices, remote devices)`` as attribute dicts."""

    def reset(self, containers: Sequence[str], device_filters: Sequence[str]) -> None:
        """Close all sessions and clear the named (or default) containers on all workers."""


class Engine(WorkerEngine, MasterEngine, Protocol):
    """Both roles: every tfteach server is a master and a worker, as in TF."""

    def cancel_steps(self) -> None:
        """Abort every step running on this task (the server is stopping: its calls are
        cancelled, and a step left waiting in a queue would keep it from stopping)."""

    def close(self) -> None:
        """Release everything; called once when the server stops."""


EngineFactory = Callable[[TaskInfo], Engine]
_registered: EngineFactory | None = None


class Cancellation:
    """A call's cancellation: ``on_cancel`` callbacks run once when the client cancels
    (at once if it already has); after ``close()`` (the call is over) nothing runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.cancelled = False
        self._closed = False

    def on_cancel(self, fn: Callable[[], None]) -> None:
        with self._lock:
            if not self.cancelled:
                self._callbacks.append(fn)
                return
        fn()

    def cancel(self) -> None:
        with self._lock:
            if self.cancelled or self._closed:
                return
            self.cancelled = True
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._callbacks = []


_call = threading.local()


def current_cancellation() -> Cancellation | None:
    """The cancellation of the RPC this thread is serving (set by the RunStep service)."""
    return getattr(_call, "cancellation", None)


def serving(cancellation: Cancellation) -> "_Serving":
    """Make ``cancellation`` this thread's ``current_cancellation()`` for the block, and
    close it afterwards (``with serving(c):``; a class, not a generator: every call
    served enters one)."""
    return _Serving(cancellation)


class _Serving:
    __slots__ = ("cancellation",)

    def __init__(self, cancellation: Cancellation) -> None:
        self.cancellation = cancellation

    def __enter__(self) -> None:
        _call.cancellation = self.cancellation

    def __exit__(self, *exc: object) -> None:
        _call.cancellation = None
        self.cancellation.close()


def set_engine_factory(factory: EngineFactory | str | None) -> EngineFactory | None:
    """Make ``factory`` (a callable or ``"module:attr"``) build the engine of new servers;
    return the factory registered before (to restore it later)."""
    global _registered
    previous = _registered
    _registered = resolve(factory) if isinstance(factory, str) else factory
    return previous


def engine_factory(explicit: EngineFactory | str | None = None) -> EngineFactory:
    """The factory a new server uses (see the module docstring for the order)."""
    choice = explicit or os.environ.get(ENGINE_ENV) or _registered or DEFAULT_ENGINE
    return resolve(choice) if isinstance(choice, str) else choice


def resolve(spec: str) -> EngineFactory:
    """Import ``"package.module:attr"``."""
    module_name, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr or "make_engine")
    except (ImportError, AttributeError) as exc:
        from tfteach import errors
        from tfteach.i18n import tr
        raise errors.NotFoundError(
            f"Cannot load the engine factory {spec!r}: {exc}",
            hint=tr("{variable} must name an importable callable as 'package.module:attr'.",
                    variable=ENGINE_ENV)
        ) from None


def as_run_result(output: RunOutput) -> RunResult:
    """Normalize an engine's run output to ``RunResult``."""
    return output if isinstance(output, RunResult) else RunResult(tensors=output)
