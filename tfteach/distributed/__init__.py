"""tfteach's cluster runtime: ClusterSpec, Server, the gRPC master/worker services, the
tensor wire format, shared-memory transfers, LocalCluster and the ``tfteach-server`` CLI.

Importing this package is cheap: the names below load their modules (and grpc) on first use.
"""
from __future__ import annotations

import importlib
import os
from typing import Any

# gRPC's C core logs connection chatter ("Got goaway") at INFO by default; learners only
# need errors. Takes effect only if grpc is not imported yet; an explicit setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

_EXPORTS = {
    "ClusterSpec": "protocol.cluster_spec",
    "Server": "service.grpc_server",
    "create_local_server": "service.grpc_server",
    "LocalCluster": "local.local_cluster",
    "ClusterClient": "client.client",
    "wait_for_task": "client.waiting",
    "wait_for_tasks": "client.waiting",
    "set_engine_factory": "contract.engine_api",
    "TaskInfo": "contract.engine_api",
    "RunResult": "contract.engine_api",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tfteach.distributed' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
