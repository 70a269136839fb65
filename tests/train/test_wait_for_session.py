"""A non-chief waiting for its chief survives a ps that dies and comes back while it waits
(TF retries there too); a cluster it never reached still fails at once."""
import threading
import time

import pytest

import tfteach as tf
from tfteach.distributed import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def _graph():
    with tf.Graph().as_default() as graph, tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0, name="waited_for")
        ready = tf.report_uninitialized_variables()
    return graph, v, ready


def test_a_waiting_worker_survives_a_ps_restart():
    with LocalCluster(ps=1, workers=2) as cluster:
        graph, v, ready = _graph()
        config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:1"])
        manager = tf.train.SessionManager(ready_op=ready, graph=graph, recovery_wait_secs=0.0)
        got, failed = [], []

        def wait():
            try:
                got.append(manager.wait_for_session(cluster.target("worker", 1), config=config,
                                                    max_wait_secs=60))
            except Exception as error:          # what the test reports
                failed.append(error)

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        for _ in range(3):                       # it polls without a pause: some poll is
            time.sleep(0.3)                      # under way when the ps dies
            cluster.kill("ps", 0)
            time.sleep(0.3)
            cluster.restart("ps", 0)
        with tf.Session(cluster.target("worker", 0), graph=graph) as chief:
            chief.run(v.initializer)
        waiter.join(30)
        assert failed == [] and len(got) == 1
        with got[0] as sess:
            assert sess.run(v) == 3.0


def test_a_cluster_never_reached_fails_at_once():
    graph, _, ready = _graph()
    manager = tf.train.SessionManager(ready_op=ready, graph=graph, recovery_wait_secs=0.1)
    started = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError):
        manager.wait_for_session("grpc://localhost:1", max_wait_secs=60)
    assert time.monotonic() - started < 10
