"""``Session("grpc://host:port")``: a client session whose master is a cluster task.

The client keeps the graph; the master gets it on the first run (CreateSession) and the new
ops whenever it grew (ExtendSession). Each ``run`` is one RunStep with feeds, fetches and
targets by name; concurrent ``run`` calls from several threads run concurrently, as in TF.
What the master reports for the learner (the ``Device mapping`` header and the placement log
when this session's ``log_device_placement`` is on) is printed here, on the client's stdout,
so it shows in the notebook (TF logs it on the master task's stderr, where tfteach prints it
when only the server's config asks). While CreateSession waits for tasks that do not answer,
the client prints TF's waiting line every 10 s with a hint; after
``operation_timeout_in_ms`` the master gives up with UnavailableError. A step's
``RunOptions.timeout_in_ms`` (else ``operation_timeout_in_ms``) is also the deadline of every
call to the master, plus ``DEADLINE_GRACE_S`` so that a live master's own error comes first:
a master that stopped answering (SIGSTOP) gives DeadlineExceededError, as in TF.

Tokens: ``TFTEACH_CLUSTER_TOKEN`` from the environment, or the token of a LocalCluster started
in this process whose task owns the address (``remember_token``). A task of a
``LocalCluster(backend="tensorflow")`` of this process runs TF's own server, which speaks
TF's protocol, not ours: a session (or ``Session.reset``) aimed at it is refused at once
with UnimplementedError and a hint (``remember_tensorflow_task``).
"""
from __future__ import annotations

import functools
import json
import sys
import threading
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.distributed.client.client import ClusterClient, strip_scheme
from tfteach.distributed.transport import security
from tfteach.framework.graph_io import graph_to_json
from tfteach.framework.node_def import GraphDef
from tfteach.i18n import tr
from tfteach.runtime.session import BaseSession
from tfteach.runtime.session_config import ConfigProto, RunMetadata, RunOptions, StepStats

_tokens: dict[str, str] = {}
_tensorflow_tasks: dict[str, str] = {}      # "localhost:port" -> what runs there
_clients: dict[str, ClusterClient] = {}
_lock = threading.Lock()
WAIT_LOG_PERIOD_S = 10.0
DEADLINE_GRACE_S = 1.0  # a live master reports its own timeout first; a frozen one cannot


def remember_token(address: str, token: str) -> None:
    """Let sessions in this process reach ``address`` with ``token`` (LocalCluster calls it)."""
    with _lock:
        _tokens[strip_scheme(address)] = token
        _clients.pop(strip_scheme(address), None)


def remember_tensorflow_task(address: str, what: str | None) -> None:
    """``address`` runs TensorFlow's own server (``what`` names it; None: no longer)."""
    with _lock:
        if what is None:
            _tensorflow_tasks.pop(_loopback_key(address), None)
        else:
            _tensorflow_tasks[_loopback_key(address)] = what


def _loopback_key(address: str) -> str:
    host, _, port = strip_scheme(address).rpartition(":")
    loopback = host.strip("[]") in ("localhost", "127.0.0.1", "::1", "0.0.0.0")
    return f"localhost:{port}" if loopback else f"{host}:{port}"


def refuse_tensorflow_task(target: str) -> None:
    """Raise UnimplementedError if ``target`` is a TensorFlow server of a LocalCluster."""
    what = _tensorflow_tasks.get(_loopback_key(target))
    if what is not None:
        raise errors.UnimplementedError(
            f"{target} is {what}, which runs TensorFlow's own server "
            "(LocalCluster(backend='tensorflow')); a tfteach Session cannot talk to it",
            hint=tr("Run this cluster's sessions on real TensorFlow: `import "
                    "tensorflow.compat.v1 as tf`, `tf.disable_v2_behavior()`, then "
                    "`tf.Session(cluster.target(...))`; or start LocalCluster(...) without "
                    "backend='tensorflow' for tfteach."))


def client_for(address: str) -> ClusterClient:
    """The client for sessions to ``address``, with the token and TLS files that hold now: a
    learner who sets ``TFTEACH_CLUSTER_TOKEN`` after a refused step is heard on the next
    session, not refused again with the old credentials."""
    address = strip_scheme(address)
    with _lock:
        token = _tokens.get(address) or security.token_from_env()
        tls = security.TLSConfig.from_env()
        client = _clients.get(address)
        if client is None or client.credentials != (token, tls):
            client = _clients[address] = ClusterClient(token, tls)
        return client


class RemoteSession(BaseSession):
    """A session run by a cluster's master task."""

    def __init__(self, target: str, graph: Any = None, config: ConfigProto | None = None) -> None:
        refuse_tensorflow_task(target)
        super().__init__(target, graph, config)
        self.address = strip_scheme(target)
        self._master = client_for(self.address).master(self.address)
        self._handle: str | None = None
        self._sent = 0
        self._lock = threading.RLock()

    def _ensure_session(self) -> None:
        if self._handle is not None and self.graph.version == self._sent:
            return              # the graph has not grown (version: its number of ops)
        ops = self.graph.get_operations()
        if self._handle is None:
            self._handle = self._create(graph_to_json(ops))
            self._sent = len(ops)
        elif len(ops) > self._sent:
            self._master.extend_session(self._handle, graph_to_json(ops[self._sent:]),
                                        self._sent, self._deadline_s())
            self._sent = len(ops)

    def _create(self, graph_def: bytes) -> str:
        config = json.dumps(self.config.to_dict()).encode()
        done = threading.Event()
        waiter = threading.Thread(target=self._say_waiting, args=(done,), daemon=True)
        waiter.start()
        try:
            handle, _ = self._master.create_session(graph_def, config, self._deadline_s())
            return handle
        finally:
            done.set()

    def _deadline_s(self, timeout_in_ms: int = 0) -> float | None:
        """The deadline of a call to the master, as in TF's GrpcSession: the step's
        ``RunOptions.timeout_in_ms``, else ``operation_timeout_in_ms``; None: no deadline.
        A call with one goes as a unary gRPC call, so a stopped master cannot hold it."""
        ms = timeout_in_ms or self.config.operation_timeout_in_ms
        return ms / 1000 + DEADLINE_GRACE_S if ms and ms > 0 else None

    def _say_waiting(self, done: threading.Event) -> None:
        while not done.wait(WAIT_LOG_PERIOD_S):
            print(errors.with_hint(
                f"CreateSession still waiting for response from the workers of "
                f"grpc://{self.address}",
                tr("is every task of the cluster started? is each address right? (the master "
                   "task's log names the missing task)")), flush=True)

    def _run_flat(self, tensors: list, targets: list, feeds: dict, options: RunOptions,
                  run_metadata: RunMetadata | None) -> list:
        with self._lock:    # steps run concurrently, as in TF; only the graph's upload waits
            self._ensure_session()
        trace = options.trace_level >= RunOptions.FULL_TRACE and run_metadata is not None
        opts = _options(trace, options.timeout_in_ms, run_metadata is not None,
                        bool(options.output_partition_graphs) and run_metadata is not None)
        fetches = list(dict.fromkeys(t.name for t in tensors if t is not None))
        out, meta = self._master.run_step(self._handle, {t.name: v for t, v in feeds.items()},
                                          fetches, [op.name for op in targets], opts,
                                          self._deadline_s(options.timeout_in_ms))
        info = json.loads(meta or b"{}")
        if info.get("log"):
            print("\n".join(info["log"]), file=sys.stdout)
        if run_metadata is not None:
            run_metadata.placement = info.get("placement", {})
            if "step_stats" in info:
                run_metadata.step_stats = StepStats.from_dict(info["step_stats"])
            if "partition_graphs" in info:
                run_metadata.partition_graphs = [GraphDef.from_dict(g)
                                                 for g in info["partition_graphs"]]
        return [None if t is None else _value(out[t.name]) for t in tensors]

    def list_devices(self) -> list:
        with self._lock:
            self._ensure_session()
            local, remote = self._master.list_devices(self._handle, self._deadline_s())
        return [_Attrs(d) for d in sorted(local + remote, key=lambda d: d["name"])]

    def close(self) -> None:
        if not getattr(self, "_closed", True) and self._handle is not None:
            try:
                self._master.close_session(self._handle, self._deadline_s())
            except errors.OpError:
                pass
        super().close()

    @staticmethod
    def reset(target: str, containers: list | None = None, config: Any = None) -> None:
        refuse_tensorflow_task(target)
        address = strip_scheme(target)
        filters = list(getattr(config, "device_filters", []) or [])
        client_for(address).master(address).reset(containers or [], filters)


@functools.lru_cache(maxsize=64)
def _options(trace: bool, timeout_in_ms: int, metadata: bool, graphs: bool) -> bytes:
    """RunStep's options; ``metadata``: the answer must hold the placement; ``graphs``: and
    the partition graphs (``RunOptions.output_partition_graphs``)."""
    return json.dumps({"trace": trace, "timeout_in_ms": timeout_in_ms,
                       "metadata": metadata, "partition_graphs": graphs}).encode()


class _Attrs:
    def __init__(self, d: dict) -> None:
        self.name = d["name"]
        self.device_type = d["device_type"]
        self.memory_limit_bytes = d["memory_limit"]
        self.incarnation = d.get("incarnation", 0)

    def __repr__(self) -> str:
        return f"_DeviceAttributes({self.name}, {self.device_type}, {self.memory_limit_bytes})"


def _value(v: Any) -> Any:
    v = np.asarray(v) if not isinstance(v, np.ndarray) else v
    return v[()] if v.ndim == 0 else v
