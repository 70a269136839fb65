"""A large tensor between hosts leaves the ps's bulk port in parts, each on a connection of
its own, and arrives intact on the worker of the client's host (its in-process master)."""
from __future__ import annotations

import sys

import pytest

from on_hosts import environment

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

PULL = """
import sys
import numpy as np
import tfteach as tf
from tfteach.distributed.transport import bulk_parts
parts = []
read = bulk_parts.PartReader.__init__
def counted(self, *args, **kwargs):
    parts.append(args[1] is not None)     # a connection of its own asked for it
    read(self, *args, **kwargs)
bulk_parts.PartReader.__init__ = counted
ps, me = sys.argv[1], sys.argv[2]
server = tf.train.Server(tf.train.ClusterSpec({"ps": [ps], "worker": [me]}), "worker", 0)
n = 6 << 20                               # 24 MiB of int32
with tf.device("/job:ps/task:0"):
    v = tf.Variable(tf.range(n) * 7)
with tf.device("/job:worker/task:0"):
    y = v - 3
with tf.Session(server.target) as sess:
    sess.run(v.initializer)
    same = [np.array_equal(sess.run(y), np.arange(n) * 7 - 3) for _ in range(2)]
print(same, parts)
"""


def test_a_large_tensor_crosses_hosts_in_parts_intact(make_hosts, start):
    hosts = make_hosts(2)
    ps, me = f"{hosts.address(0)}:2222", f"{hosts.address(1)}:2222"
    task = start(hosts, 0, "tfteach.server", f"--ps_hosts={ps}", f"--worker_hosts={me}",
                 "--job_name=ps", "--task_index=0")
    task.wait_for("Started server")
    done = hosts.run(1, [sys.executable, "-c", PULL, ps, me], env=environment())
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[True, True] [True, True]"
