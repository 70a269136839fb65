"""The tutorial's host/worker ``config.json`` pair, one task per host: two workers and the
client on three hosts, on tfteach and on TensorFlow, then the same client with 1 MiB
tensors (what shared memory carries between tasks of one host).

In the Mininet-style set-up (``shared``: every host keeps this machine's hostname and
/dev/shm) the hosts agree on tfteach's host key, yet no task reaches another's connection:
shared memory must be proven before it is used, or a step fails with DataLossError.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from on_hosts import ON_TF

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

SET_UPS = [pytest.param("tfteach", False, id="tfteach"),
           pytest.param("tensorflow", False, id="tensorflow", marks=ON_TF),
           pytest.param("tfteach", True, id="tfteach-shared")]


def big_tensors_result() -> tuple[float, float]:
    """What ``big_tensors.py`` prints, computed here with NumPy."""
    x = np.random.RandomState(0).uniform(-1, 1, size=(512, 512)).astype(np.float32)
    y = (x.astype(np.float64) @ x) * 0.5 + x
    return float(y.sum()), float(np.abs(y).max())


def finished(client) -> list[str]:
    assert client.wait(120) == 0, client.transcript()
    return client.stdout.splitlines()


@pytest.mark.parametrize("backend, shared", SET_UPS)
def test_config_json_pair_with_one_task_per_host(backend, shared, make_hosts, start,
                                                  tmp_path):
    hosts = make_hosts(3, shared=shared)
    workers = [f"{hosts.address(i)}:2222" for i in (0, 1)]
    (tmp_path / "config.json").write_text(json.dumps({"worker": workers}))
    servers = [start(hosts, task, "config_server.py", task, backend=backend)
               for task in (0, 1)]
    for task, server in enumerate(servers):
        server.wait_for(f"Starting server #{task}")
    clients = [start(hosts, 2, name, backend=backend)
               for name in ("config_client.py", "big_tensors.py")]
    assert finished(clients[0]) == ["238"]
    total, largest = map(float, finished(clients[1])[-1].split())
    assert (total, largest) == pytest.approx(big_tensors_result(), rel=1e-4)
