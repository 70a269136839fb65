"""The seeds' distributed programs on a real LocalCluster (task subprocesses on loopback)."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.cluster import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(ps=1, workers=2) as c:
        yield c


def test_session_on_a_local_cluster_needs_no_token_setup(cluster):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable([[1.0], [2.0]], name="w")
    with tf.device("/job:worker/task:1"):
        y = tf.matmul(tf.constant([[3.0, 4.0]]), w)
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(w.initializer)
        assert sess.run(y).tolist() == [[11.0]]


def test_tasks_have_their_own_devices(cluster):
    sess = tf.Session(cluster.target("worker", 1))
    tf.constant(1.0)
    names = [d.name for d in sess.list_devices()]
    assert "/job:ps/replica:0/task:0/device:CPU:0" in names
    assert "/job:worker/replica:0/task:1/device:CPU:0" in names


def test_killed_task_fails_the_step_then_restart_recovers(cluster):
    with tf.device("/job:worker/task:1"):
        c = tf.constant(2.0) * 3.0
    sess = tf.Session(cluster.target("worker", 0))
    assert sess.run(c) == 6.0
    cluster.kill("worker", 1)
    with pytest.raises(tf.errors.UnavailableError, match="task:1"):
        sess.run(c)
    cluster.restart("worker", 1)
    sess2 = tf.Session(cluster.target("worker", 0))
    assert sess2.run(c) == 6.0


def test_unreachable_task_times_out_with_unavailable(cluster):
    from tfteach.distributed.cluster_spec import ClusterSpec
    from tfteach.distributed.server import Server
    from tfteach.distributed.processes import free_ports
    p1, p2 = free_ports(2)
    spec = ClusterSpec({"worker": [f"localhost:{p1}"], "ps": [f"localhost:{p2}"]})
    with Server(spec, job_name="worker", task_index=0) as server:
        tf.constant(1.0)
        cfg = tf.ConfigProto(operation_timeout_in_ms=1500)
        with pytest.raises(tf.errors.UnavailableError) as e:
            tf.Session(server.target, config=cfg).run(tf.constant(2.0))
    assert "/job:ps/replica:0/task:0" in str(e.value) and "Hint:" in str(e.value)
