"""In-graph replication: one client builds a tower per worker task (and per GPU of each task),
averages the towers' gradients and applies them to variables on the ps."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.experiments import InProcessCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def _towers(devices, lr=0.5):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones((3, 1), np.float32), name="w")
        gs = tf.train.get_or_create_global_step()
    opt = tf.train.GradientDescentOptimizer(lr)
    feeds, grads = [], []
    for i, device in enumerate(devices):
        with tf.device(device), tf.name_scope(f"tower_{i}"):
            x = tf.placeholder(tf.float32, [None, 3], name="x")
            y = tf.placeholder(tf.float32, [None, 1], name="y")
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
            grads.append(opt.compute_gradients(loss, [w])[0][0])
            feeds.append((x, y))
    avg = tf.add_n(grads) / float(len(grads))
    train = opt.apply_gradients([(avg, w)], global_step=gs)
    return w, gs, feeds, train


def _expected(batches, lr=0.5):
    w = np.ones((3, 1))
    grads = [2 * x.T @ (x @ w - y) / len(x) for x, y in batches]
    return w - lr * np.mean(grads, axis=0)


@pytest.mark.parametrize("gpus", [0, 2])
def test_towers_on_worker_tasks_average_their_gradients(gpus):
    rng = np.random.default_rng(0)
    with InProcessCluster(ps=1, workers=2, gpus_per_task=gpus) as cluster:
        devices = [f"/job:worker/task:{t}" + (f"/device:GPU:{g}" if gpus else "")
                   for t in range(2) for g in range(max(gpus, 1))]
        w, gs, feeds, train = _towers(devices)
        batches = [(rng.normal(size=(4, 3)), rng.normal(size=(4, 1))) for _ in devices]
        feed = {t: v for (x, y), (bx, by) in zip(feeds, batches) for t, v in ((x, bx), (y, by))}
        md = tf.RunMetadata()
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, feed, run_metadata=md)
            np.testing.assert_allclose(sess.run(w), _expected(batches), rtol=1e-5)
            assert sess.run(gs) == 1
        for i, device in enumerate(devices):
            placed = md.placement[f"tower_{i}/MatMul"]
            assert placed == device.replace("/task:", "/replica:0/task:") + \
                ("" if gpus else "/device:CPU:0")
        assert md.placement["w"].startswith("/job:ps/replica:0/task:0/device:")


def test_replica_device_setter_places_variables_round_robin_on_the_ps_tasks():
    with InProcessCluster(ps=2, workers=1) as cluster:
        setter = tf.train.replica_device_setter(cluster=cluster.spec,
                                                worker_device="/job:worker/task:0")
        with tf.device(setter):
            v1, v2, v3 = (tf.Variable(float(i), name=f"v{i}") for i in (1, 2, 3))
            with tf.device("/job:worker/task:0"):
                local = tf.Variable(0.0, name="local")
            total = tf.add_n([v1, v2, v3, local], name="total")
        md = tf.RunMetadata()
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(total, run_metadata=md) == 6.0
        task = {n: md.placement[n].split("/device:")[0] for n in ("v1", "v2", "v3", "local",
                                                                  "total", "v1/read")}
        assert task == {"v1": "/job:ps/replica:0/task:0", "v2": "/job:ps/replica:0/task:1",
                        "v3": "/job:ps/replica:0/task:0", "local": "/job:worker/replica:0/task:0",
                        "total": "/job:worker/replica:0/task:0",
                        "v1/read": "/job:ps/replica:0/task:0"}
