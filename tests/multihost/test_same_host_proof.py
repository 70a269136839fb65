"""Same host is proven, not guessed, in the Mininet-style set-up: hosts that share this
machine's hostname and /dev/shm, each in a network namespace of its own.

Every host agrees on tfteach's host key there, yet a task sees a caller of another host
come from an address that is not its own. A client uses shared memory (and the lane) with
a task only once the task read back the nonce of the client's probe segment: a client in
the task's namespace gets that proof, one on another host does not. A task that refuses a
request's segments all the same (a proof that no longer holds) gets the request again
inline: the step computes, and the client sends no more segments there.
"""
from __future__ import annotations

import sys

import pytest

from on_hosts import environment

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

PROBE = """
import sys
from tfteach.distributed.client.client import ClusterClient
client = ClusterClient.from_env()
status = client.worker(sys.argv[1]).get_status(timeout=30)
print(client.route(sys.argv[1]).shm_shared(), repr(status["shm_host"]))
"""

STALE_PROOF = """
import sys
import numpy as np
import tfteach as tf
from tfteach.distributed.client import remote_session
address = sys.argv[1]
client = remote_session.client_for(address)
client.route(address).learn_shm(True)     # as if proven: the task now refuses its segments
x = tf.placeholder(tf.float32, [512, 512])
with tf.device("/job:worker/task:0"):
    y = x * 2.0
with tf.Session("grpc://" + address) as sess:
    for _ in range(2):
        value = sess.run(y, {x: np.ones((512, 512), np.float32)})
print(value.sum(), client.route(address).shm_shared())
"""


def a_task(hosts, start):
    """A worker task on host 0, serving."""
    task = start(hosts, 0, "tfteach.server", "--ps_hosts=",
                 f"--worker_hosts={hosts.address(0)}:2222", "--job_name=worker",
                 "--task_index=0")
    task.wait_for("Started server")
    return f"{hosts.address(0)}:2222"


def run(hosts, index: int, code: str, address: str) -> str:
    done = hosts.run(index, [sys.executable, "-c", code, address], env=environment())
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def test_only_a_caller_in_the_tasks_namespace_proves_it_shares_dev_shm(make_hosts, start):
    hosts = make_hosts(2, shared=True)
    address = a_task(hosts, start)
    from tfteach.distributed.transport import shm
    assert run(hosts, 0, PROBE, address) == f"True {shm.host_key()!r}"
    assert run(hosts, 1, PROBE, address) == "False ''"


def test_a_refused_segment_is_sent_again_inline(make_hosts, start):
    hosts = make_hosts(2, shared=True)
    address = a_task(hosts, start)
    assert run(hosts, 1, STALE_PROOF, address) == f"{2.0 * 512 * 512} False"
