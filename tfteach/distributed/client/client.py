"""A cluster's tasks as this process reaches them: ``ClusterClient``.

- ``ClusterClient(token, tls)`` keeps one ``route.TaskRoute`` per task address (its
  channel, streams, lane and shared-memory proof: how calls reach that task, decided
  there), and sends the token with every call; its repr hides the token. Creating one
  keeps freed memory for reuse (``host_memory``), as the executor does: a step's messages
  then reuse the last step's pages instead of faulting new ones in (0.5 ms per 300 KB
  feed here).
- ``client.worker(address, task_name)`` / ``client.master(target)`` return the typed stubs
  of ``stubs`` (``WorkerClient``, ``MasterClient``) on that task's route; ``waiting``
  waits for tasks to come up.
- Same host is proven, not guessed (``shm_probe``): ``shm_shared(address)`` says whether
  the task proved, on this client's channel, that it shares this process's /dev/shm.
State: the routes (guarded by one lock) and the settings they share (``RouteSettings``).
At interpreter exit (``lifetime``) the client closes every route's streams, busy ones too
(a lane's socket, which wakes its waiting reader, or a gRPC call), and refuses new calls:
a pool thread waiting on a task's answer cannot keep the program from exiting.
Invariant: the token never appears in a repr, a log line or an error.
"""
from __future__ import annotations

import threading
from typing import Any

import grpc

from tfteach.distributed.client import lifetime
from tfteach.distributed.client.route import RouteSettings, TaskRoute
from tfteach.distributed.client.stubs import MasterClient, WorkerClient, status_dict
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.transport import bulk, security, shm_probe
from tfteach.runtime import host_memory


class ClusterClient:
    """Authenticated routes to the tasks of a cluster, one per address."""

    def __init__(self, token: str | None = None, tls: security.TLSConfig | None = None,
                 status_only: bool = False) -> None:
        """``status_only``: a client that only asks tasks how they are (the JupyterLab
        server's health checks) leaves the process's malloc settings alone."""
        # large tensors from tasks on other hosts, over a socket (not with TLS: ``bulk``)
        self._settings = RouteSettings(token, tls, bulk.BulkClient(token) if tls is None
                                       else None)
        self._routes: dict[str, TaskRoute] = {}
        self._lock = threading.Lock()
        if not status_only:
            host_memory.keep_freed_memory()     # tensors in messages: no page faults per step
        lifetime.closing(self, ClusterClient._close_at_exit, "client")

    @classmethod
    def from_env(cls) -> "ClusterClient":
        """A client with the token and TLS settings of this process's environment."""
        return cls(security.token_from_env(), security.TLSConfig.from_env())

    def __repr__(self) -> str:
        return (f"ClusterClient(routes={sorted(self._routes)}, "
                f"tls={self._settings.tls is not None})")

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The call metadata (holds the token: never log it)."""
        return self._settings.metadata

    @property
    def bulk(self) -> "bulk.BulkClient | None":
        return self._settings.bulk

    @property
    def credentials(self) -> tuple[str | None, security.TLSConfig | None]:
        """The token and TLS files this client's calls carry."""
        return self._settings.token, self._settings.tls

    def route(self, address: str, task_name: str | None = None) -> TaskRoute:
        """The route to the task at ``host:port`` (``grpc://`` prefixes are accepted),
        made on first use; ``task_name`` names the task in its errors from now on."""
        address = strip_scheme(address)
        found = self._routes.get(address)
        if found is None:
            with self._lock:
                self._settings.check_not_exiting()
                found = self._routes.setdefault(address, TaskRoute(address, self._settings))
        if task_name is not None:
            found.task_name = task_name
        return found

    def channel(self, address: str) -> grpc.Channel:
        """The channel to ``host:port`` (``grpc://`` prefixes are accepted)."""
        return self.route(address).channel()

    def worker(self, address: str, task_name: str | None = None) -> WorkerClient:
        """Typed WorkerService calls to the task at ``address``."""
        return WorkerClient(self.route(address, task_name))

    def master(self, target: str) -> MasterClient:
        """Typed MasterService calls to the server at ``target`` (``grpc://host:port``)."""
        return MasterClient(self.route(target))

    def shm_shared(self, address: str, wait: float | bool = False) -> bool:
        """Whether the task at ``address`` proved that it shares this process's /dev/shm
        (``TaskRoute.shm_shared``)."""
        return self.route(address).shm_shared(wait)

    def learn_shm(self, address: str, proven: bool) -> None:
        """What a probe (or a refusal: not ``proven``) found about the task at ``address``."""
        self.route(address).learn_shm(proven)

    def learn_lane(self, address: str, name: str, host_key: str) -> None:
        """The task at ``address`` named its lane (``TaskRoute.learn_lane``)."""
        self.route(address).learn_lane(name, host_key)

    def learn_status(self, address: str, response: pb.GetStatusResponse,
                     probe: shm_probe.Probe) -> dict[str, Any]:
        """The task at ``address`` answered GetStatus to ``probe``: its ``status_dict``,
        whose ``shm_host`` is "" unless the task proved it shares this host."""
        return status_dict(response, self.route(address).learn_status(response, probe))

    def close(self) -> None:
        """Close every route's channel and streams (a call waiting on one ends with an
        error); a later call opens them again."""
        lifetime.forget(self)
        with self._lock:
            routes = list(self._routes.values())
        if self._settings.bulk is not None:
            self._settings.bulk.close()
        for route in routes:
            route.close()

    def _close_at_exit(self) -> None:
        """The interpreter is exiting: close everything and refuse new calls."""
        self._settings.exiting = True
        self.close()


def strip_scheme(target: str) -> str:
    """``grpc://host:port`` -> ``host:port``."""
    return target[len("grpc://"):] if target.startswith("grpc://") else target
