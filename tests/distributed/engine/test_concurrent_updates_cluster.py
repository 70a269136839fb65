"""Async updates from two worker processes to one variable on a ps (a real LocalCluster:
task subprocesses on loopback), as TF makes them: the ps updates the variable in place, so
no whole update is lost (single elements may race without ``use_locking``; with it every
element counts every update), and a one-element counter counts every increment."""
import threading

import numpy as np
import pytest

import tfteach as tf
from tfteach.cluster import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

SIZE = 50_000
STEPS = 300


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(ps=1, workers=2) as c:
        yield c


def _worker_graph(cluster, index, name, use_locking):
    """Worker ``index``'s graph: on the ps, ``name`` (SIZE zeros) and ``name``_count; on
    the worker, a gradient of -1 everywhere, so each step adds 1 to every element."""
    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{index}", cluster=cluster.spec)):
        v = tf.Variable(tf.zeros([SIZE]), name=name)
        count = tf.Variable(0.0, name=name + "_count")
        opt = tf.train.GradientDescentOptimizer(1.0, use_locking=use_locking)
        step = [opt.apply_gradients([(tf.fill([SIZE], -1.0), v)]),
                tf.assign_add(count, 1.0, use_locking=use_locking)]
        init = tf.global_variables_initializer()
    return graph, step, init, v, count


def _train_from_two_workers(cluster, name, use_locking):
    graphs = [_worker_graph(cluster, i, name, use_locking) for i in range(2)]
    sessions = [tf.Session(cluster.target("worker", i), graph=g[0])
                for i, g in enumerate(graphs)]
    sessions[0].run(graphs[0][2])
    failures = []

    def work(sess, step):
        try:
            for _ in range(STEPS):
                sess.run(step)
        except Exception as e:      # noqa: BLE001 - reported by the assertion below
            failures.append(e)
    threads = [threading.Thread(target=work, args=(s, g[1]))
               for s, g in zip(sessions, graphs, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out, total = sessions[0].run([graphs[0][3], graphs[0][4]])
    for sess in sessions:
        sess.close()
    assert failures == []
    return out, total


def test_two_worker_processes_lose_no_whole_update_on_the_ps(cluster):
    out, total = _train_from_two_workers(cluster, "unlocked", use_locking=False)
    assert out.max() == 2 * STEPS       # a lost whole update leaves every element short
    assert total == 2 * STEPS


def test_two_worker_processes_with_use_locking_count_every_update(cluster):
    out, total = _train_from_two_workers(cluster, "locked", use_locking=True)
    np.testing.assert_array_equal(out, np.full(SIZE, 2.0 * STEPS, np.float32))
    assert total == 2 * STEPS
