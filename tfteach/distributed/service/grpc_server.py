"""``Server``: one task of a cluster, serving TF's MasterService and WorkerService over gRPC.

Lifecycle: ``__init__`` resolves the task (job/task inferred only when unique), checks the
bind policy, binds the port (``:0`` picks a free one; ``.target`` shows the real port) and
builds the engine; ``start()`` serves and logs ``Started server with target: grpc://...``;
``stop()`` (or leaving a ``with`` block, or garbage collection) releases the port. As in TF,
a new Server on an address in use (by a live Server of this process too: a notebook cell run
again) fails with UnknownError ``Could not start gRPC server``; its hint says to reuse or
``stop()`` the earlier server, or restart the kernel.
State: the grpc server, the engine, ``_live = {bind address: Server}`` per process.
Invariant: a server binds only its own address, and never logs or shows the token.
"""
from __future__ import annotations

import threading
import weakref
from concurrent import futures
from typing import Any

import grpc

from tfteach import errors
from tfteach.distributed.client import in_process_master as local_master
from tfteach.distributed.client import lifetime
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.contract.engine_api import EngineFactory, TaskInfo, engine_factory
from tfteach.distributed.protocol import limits, tflog
from tfteach.distributed.protocol.cluster_spec import ClusterSpec
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.service.servicers import add_services
from tfteach.distributed.transport import bulk, lane_server, security, shm
from tfteach.i18n import tr

MAX_WORKERS = limits.MAX_WORKERS
_live: "weakref.WeakValueDictionary[str, Server]" = weakref.WeakValueDictionary()
_live_lock = threading.Lock()


class Server:
    """An in-process tfteach server, as ``tf.train.Server``.

    ``Server(cluster, job_name=None, task_index=None, protocol=None, config=None, start=True)``
    where ``cluster`` is a ClusterSpec, a dict, a ClusterDef or a ServerDef. Keyword-only
    extras: ``engine_factory`` (see ``engine_api``), ``token`` (default: env
    ``TFTEACH_CLUSTER_TOKEN``), ``insecure`` (serve a non-loopback address without a token),
    ``tls`` (a ``security.TLSConfig``; default from ``TFTEACH_TLS_*``),
    ``max_message_bytes`` (the largest request it reads; default env
    ``TFTEACH_MAX_MESSAGE_BYTES``, else 1 GiB: see ``limits``).
    """

    def __init__(self, server_or_cluster_def: Any, job_name: str | None = None,
                 task_index: int | None = None, protocol: str | None = None,
                 config: Any = None, start: bool = True, *,
                 engine_factory: EngineFactory | str | None = None, token: str | None = None,
                 insecure: bool = False, tls: security.TLSConfig | None = None,
                 max_message_bytes: int | None = None) -> None:
        cluster, job_name, task_index, protocol, config = _server_def_parts(
            server_or_cluster_def, job_name, task_index, protocol, config)
        self._cluster = ClusterSpec(cluster)
        self._job_name = _infer_job(self._cluster, job_name)
        self._task_index = _infer_task(self._cluster, self._job_name, task_index)
        self._address = self._cluster.task_address(self._job_name, self._task_index)
        self._protocol = _check_protocol(protocol)
        self._config = config
        self._token = token if token is not None else security.token_from_env()
        self._tls = tls if tls is not None else security.TLSConfig.from_env()
        security.check_bind_policy(self._address, self._token, insecure)
        self._engine_factory = engine_factory
        self._max_message_bytes = limits.max_message_bytes(max_message_bytes)
        self._grpc: grpc.Server | None = None
        self._lane: "lane_server.LaneServer | None" = None
        self._bulk: "bulk.BulkServer | None" = None
        self._started = False
        self._bind()
        if start:
            self.start()

    def __repr__(self) -> str:
        state = "running" if self._started else ("stopped" if self._grpc is None else "bound")
        return (f"Server(target={self.target!r}, job_name={self._job_name!r}, "
                f"task_index={self._task_index}, state={state})")

    @property
    def target(self) -> str:
        """``grpc://host:port`` of this task (the real port after binding ``:0``)."""
        return f"grpc://{self._address}"

    @property
    def bulk_port(self) -> int:
        """The TCP port where large tensors leave for other hosts (``bulk``; 0: none)."""
        return self._bulk.port if self._bulk is not None else 0

    @property
    def server_def(self) -> pb.ServerDef:
        """This server's ``ServerDef`` (cluster, job, task, protocol)."""
        return pb.ServerDef(cluster=self._cluster.as_cluster_def(), job_name=self._job_name,
                            task_index=self._task_index, protocol=self._protocol)

    @property
    def engine(self) -> Any:
        """The engine serving this task (``None`` once stopped)."""
        return self._engine if self._grpc is not None else None

    def start(self) -> None:
        """Start serving (again, on the same port, after ``stop()``)."""
        if self._started:
            return
        if self._grpc is None:
            self._bind()
        shm.sweep_dead()
        self._grpc.start()
        self._started = True
        local_master.register(self._address, self, self._token)
        tflog.info(f"Started server with target: {self.target}")

    def join(self) -> None:
        """Block until the server stops (``stop()`` from another thread, or a signal)."""
        while self._grpc is not None and self._grpc.wait_for_termination(timeout=0.5):
            pass

    def stop(self, grace: float | None = None) -> None:
        """Stop serving and release the port, the engine and its shared memory. Steps
        still running on this task (after ``grace`` s, at once without one) are aborted,
        so a step waiting in a queue cannot keep the server from stopping."""
        server, started = self._grpc, self._started
        self._grpc, self._started = None, False
        if server is None:
            return
        self._finalizer.detach()
        lifetime.forget(self)
        local_master.forget(self._address, self)
        if not started:
            server.start()      # gRPC releases a bound port only when a started server stops
        _cancel_steps_after(self._engine, grace)
        server.stop(grace).wait()
        if self._lane is not None:
            self._lane.stop()
        if self._bulk is not None:
            self._bulk.stop()
        with _live_lock:
            if _live.get(self._bind_address) is self:
                del _live[self._bind_address]
            others = len(_live)
        close = getattr(self._engine, "close", None)
        if close is not None:
            close()
        self._client.close()
        shm.sweep_dead()        # what callers killed during the last calls left behind
        if not others:
            shm.release_own()

    @staticmethod
    def create_local_server(config: Any = None, start: bool = True) -> "Server":
        """``tf.train.Server.create_local_server``: see the module-level function."""
        return create_local_server(config, start)

    def __enter__(self) -> "Server":
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def _bind(self) -> None:
        host, port = security.split_address(self._address)
        bind = security.grpc_address(security.bind_host(host), port)
        interceptors = [security.TokenInterceptor(self._token, self._task_name)] \
            if self._token else []
        server = grpc.server(futures.ThreadPoolExecutor(MAX_WORKERS, "tfteach-rpc"),
                             interceptors=interceptors,
                             options=limits.server_options(self._max_message_bytes),
                             maximum_concurrent_rpcs=limits.MAX_CONCURRENT_RPCS)
        real_port = self._add_port(server, bind)
        self._address = f"{host}:{real_port}" if ":" not in host else f"[{host}]:{real_port}"
        self._bind_address = security.grpc_address(security.bind_host(host), real_port)
        self._cluster = _with_address(self._cluster, self._job_name, self._task_index,
                                      self._address)
        self._client = ClusterClient(self._token, self._tls)
        try:
            self._engine = engine_factory(self._engine_factory)(TaskInfo(
                self._cluster, self._job_name, self._task_index, self._address,
                self._config, self._client))
        except BaseException:
            _stop_grpc(server)      # release the port we just bound
            raise
        servicers = add_services(server, self._engine, self._task_name)
        self._bulk = bulk.serve(self._engine, security.bind_host(host), self._token, self._tls,
                                real_port)
        servicers[1].bulk_port = self._bulk.port if self._bulk is not None else 0
        self._lane = lane_server.serve(servicers, self._token, self._max_message_bytes,
                                       self._task_name)
        self._grpc = server
        self._finalizer = weakref.finalize(self, _stop_transport, server, self._lane,
                                           self._bulk)
        lifetime.closing(self, _stop_now, "server")
        with _live_lock:
            _live[self._bind_address] = self

    def _add_port(self, server: grpc.Server, bind: str) -> int:
        try:
            if self._tls is not None:
                port = server.add_secure_port(bind, self._tls.server_credentials())
            else:
                port = server.add_insecure_port(bind)
        except RuntimeError:
            port = 0
        if port == 0:
            raise errors.UnknownError("Could not start gRPC server", hint=_busy_hint(
                self._task_name, bind))
        return port

    @property
    def _task_name(self) -> str:
        return f"/job:{self._job_name}/replica:0/task:{self._task_index}"


def _stop_now(server: Server) -> None:
    """At exit: cancel the calls in progress (a client that never closed its stream)."""
    server.stop(0)


def _cancel_steps_after(engine: Any, grace: float | None) -> None:
    """Abort the engine's running steps after ``grace`` s (at once when None or 0)."""
    cancel = getattr(engine, "cancel_steps", None)     # an engine written before it
    if cancel is None:
        return
    if not grace:
        cancel()
        return
    timer = threading.Timer(grace, cancel)
    timer.daemon = True
    timer.start()


def _stop_transport(server: grpc.Server, lane: "lane_server.LaneServer | None",
                    bulk_server: "bulk.BulkServer | None" = None) -> None:
    """At garbage collection: stop the lane, the bulk port and the gRPC server."""
    if lane is not None:
        lane.stop()
    if bulk_server is not None:
        bulk_server.stop()
    _stop_grpc(server)


def _stop_grpc(server: grpc.Server) -> None:
    try:
        server.start()          # a bound port is released only when a started server stops
    except ValueError:          # it was started already
        pass
    server.stop(None)


def create_local_server(config: Any = None, start: bool = True) -> Server:
    """A single-task server on ``localhost`` with a free port, as TF's."""
    return Server({"localhost": ["localhost:0"]}, protocol="grpc", config=config, start=start)


def _server_def_parts(value: Any, job_name: str | None, task_index: int | None,
                      protocol: str | None, config: Any) -> tuple:
    if isinstance(value, pb.ServerDef):
        return (value.cluster, job_name or value.job_name or None,
                value.task_index if task_index is None else task_index,
                protocol or value.protocol or None, config)
    return value, job_name, task_index, protocol, config


def _infer_job(cluster: ClusterSpec, job_name: str | None) -> str:
    if job_name is not None:
        return job_name
    if len(cluster.jobs) == 1:
        return cluster.jobs[0]
    raise ValueError("Must specify an explicit `job_name`.")


def _infer_task(cluster: ClusterSpec, job_name: str, task_index: int | None) -> int:
    if task_index is not None:
        return task_index
    indices = cluster.task_indices(job_name)
    if len(indices) == 1:
        return indices[0]
    raise ValueError("Must specify an explicit `task_index`.")


def _check_protocol(protocol: str | None) -> str:
    if protocol in (None, "", "grpc"):
        return "grpc"
    raise ValueError(f"Unsupported protocol {protocol!r}: tfteach servers speak 'grpc'.")


def _with_address(cluster: ClusterSpec, job: str, task: int, address: str) -> ClusterSpec:
    jobs = {name: {i: cluster.task_address(name, i) for i in cluster.task_indices(name)}
            for name in cluster.jobs}
    jobs[job][task] = address
    return ClusterSpec(jobs)


def _busy_hint(task_name: str, bind: str) -> str:
    """What to do when ``bind`` cannot be bound (in use, or not this machine's address)."""
    with _live_lock:
        holder = _live.get(bind)
    if holder is not None:
        return tr("{server} of this process already serves {address} (was the cell that "
                  "created it run again?). Reuse that server, call its .stop() first, or "
                  "restart the kernel.", server=repr(holder), address=bind)
    return tr("{task} could not listen on {address}: the port is in use (another notebook or "
              "tfteach-server?) or the host is not an address of this machine. Stop the other "
              "server, or pick another port in the ClusterSpec.", task=task_name, address=bind)
