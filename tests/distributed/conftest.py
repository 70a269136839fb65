"""Fixtures for the cluster runtime tests: a private registry dir, no inherited token,
in-process servers that are always stopped, and LocalClusters running the transport engine."""
from __future__ import annotations

import os

import pytest
from dist_helpers import PROBE_ENGINE


@pytest.fixture(autouse=True, scope="session")
def _private_registry(tmp_path_factory):
    old = os.environ.get("TFTEACH_REGISTRY_DIR")
    os.environ["TFTEACH_REGISTRY_DIR"] = str(tmp_path_factory.mktemp("registry") / "clusters")
    yield
    if old is None:
        os.environ.pop("TFTEACH_REGISTRY_DIR", None)
    else:
        os.environ["TFTEACH_REGISTRY_DIR"] = old


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    """No inherited token, TLS or engine choice."""
    for name in ("TFTEACH_CLUSTER_TOKEN", "TFTEACH_ENGINE", "TFTEACH_TLS_CERT",
                 "TFTEACH_TLS_KEY", "TFTEACH_TLS_CA"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def make_server():
    """Build in-process Servers (transport engine) that are stopped after the test."""
    from tfteach.distributed.service.grpc_server import Server

    servers = []

    def make(cluster=None, **kwargs):
        kwargs.setdefault("engine_factory", PROBE_ENGINE)
        server = Server(cluster or {"local": ["localhost:0"]}, **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def client():
    from tfteach.distributed.client.client import ClusterClient

    result = ClusterClient()
    yield result
    result.close()


@pytest.fixture(scope="module")
def cluster():
    """One ps and two workers in subprocesses; tests that kill tasks use their own."""
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=1, workers=2, engine=PROBE_ENGINE) as result:
        yield result



@pytest.fixture
def engine_cluster(monkeypatch):
    """1 ps + 2 workers as in-process servers running the graph engine (CPU only)."""
    import socket

    from tfteach.distributed.protocol.cluster_spec import ClusterSpec
    from tfteach.distributed.engine.graph_engine import GraphEngine
    from tfteach.distributed.service.grpc_server import Server

    def port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    spec = ClusterSpec({"ps": [f"localhost:{port()}"],
                        "worker": [f"localhost:{port()}", f"localhost:{port()}"]})
    servers = {(j, i): Server(spec, job_name=j, task_index=i, engine_factory=GraphEngine)
               for j, i in (("ps", 0), ("worker", 0), ("worker", 1))}
    yield servers
    for s in servers.values():
        s.stop()
