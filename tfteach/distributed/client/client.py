"""A cluster's tasks as this process reaches them: ``ClusterClient``.

- ``ClusterClient(token, tls)`` keeps one ``route.TaskRoute`` per task address (its
  channel, streams, lane and shared-memory proof: how calls reach that task, decided
  there), and sends the token with every call; its repr hides the token. Creating one
  keeps freed memory for reuse (``host_memory``), as the executor does: a step's messages
  then reuse the last step's pages instead of faulting new ones in (0.5 ms per 300 KB
  feed here).
- ``client.worker(address, task_name)`` / ``client.master(target)`` return the typed stubs
  of ``stubs`` (``WorkerClient``, ``MasterClient``) on that task's route; ``waiting``
  waits for tasks to come up. What concerns one task (its channel, whether it proved that
  it shares this host's /dev/shm, its lane) is asked of its route: ``client.route(address)``.
State: the routes (guarded by one lock) and the settings they share (``RouteSettings``).
At interpreter exit (``lifetime``) the client closes every route's streams, busy ones too
(a lane's socket, which wakes its waiting reader, or a gRPC call), and refuses new calls:
a pool thread waiting on a task's answer cannot keep the program from exiting.
Invariant: the token never appears in a repr, a log line or an error.
"""
from __future__ import annotations

import threading


from tfteach.distributed.client import lifetime
from tfteach.distributed.client.route import RouteSettings, TaskRoute
from tfteach.distributed.client.stubs import MasterClient, WorkerClient
from tfteach.distributed.transport import bulk, security
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

    def worker(self, address: str, task_name: str | None = None) -> WorkerClient:
        """Typed WorkerService calls to the task at ``address``."""
        return WorkerClient(self.route(address, task_name))

    def master(self, target: str) -> MasterClient:
        """Typed MasterService calls to the server at ``target`` (``grpc://host:port``)."""
        return MasterClient(self.route(target))

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
