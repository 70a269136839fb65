"""Sparse gradients between tasks (in-process servers, gRPC on loopback): an IndexedSlices
fetched from a grpc:// session, and SyncReplicasOptimizer training an embedding on the ps."""
import threading

import numpy as np
import pytest

import tfteach as tf
from tfteach.experiments import InProcessCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]

TABLE = np.arange(12, dtype=np.float32).reshape(4, 3)


@pytest.fixture
def cluster():
    with InProcessCluster(ps=1, workers=2) as c:
        yield c


def test_an_indexed_slices_fetched_over_grpc_is_an_indexed_slices_value(cluster):
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            emb = tf.Variable(TABLE, name="emb")
        with tf.device("/job:worker/task:0"):
            ids = tf.placeholder(tf.int32, [None])
            grad = tf.gradients(tf.reduce_sum(tf.nn.embedding_lookup(emb, ids)), emb)[0]
        with tf.Session(cluster.target(), graph=g) as sess:
            sess.run(emb.initializer)
            got, empty = sess.run(grad, {ids: [3, 1, 3]}), sess.run(grad, {ids: []})
    assert type(got).__name__ == "IndexedSlicesValue"
    assert got.indices.tolist() == [3, 1, 3] and got.indices.dtype == np.int32
    assert got.values.tolist() == [[1.0] * 3] * 3
    assert got.dense_shape.tolist() == [4, 3]
    assert empty.values.shape == (0, 3) and empty.indices.tolist() == []


class Worker:
    """One worker's graph: loss = sum(embedding rows of ids * weight); emb on the ps."""

    def __init__(self, cluster, index):
        self.index, self.target = index, cluster.target("worker", index)
        self.graph = tf.Graph()
        with self.graph.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{index}", cluster=cluster.spec)):
            self.emb = tf.Variable(tf.zeros([4, 2]), name="emb")
            self.gs = tf.train.get_or_create_global_step()
            self.ids = tf.placeholder(tf.int32, [2])
            self.weight = tf.placeholder(tf.float32, [2, 1])
            loss = tf.reduce_sum(tf.nn.embedding_lookup(self.emb, self.ids) * self.weight)
            self.opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0), 2)
            self.train = self.opt.minimize(loss, global_step=self.gs)
        # no initial tokens: a train step returns only after the chief applied the average
        self.hooks = [self.opt.make_session_run_hook(index == 0, num_tokens=0)]

    def run_one_step(self, ids, weight):
        with self.graph.as_default():
            config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{self.index}"])
            with tf.train.MonitoredTrainingSession(
                    master=self.target, is_chief=self.index == 0, config=config,
                    hooks=self.hooks, stop_grace_period_secs=5) as sess:
                sess.run(self.train, {self.ids: ids, self.weight: weight})


def test_sync_replicas_averages_each_embedding_row_over_the_workers_that_had_it(cluster):
    workers = [Worker(cluster, i) for i in range(2)]
    feeds = [([1, 3], [[1], [1]]), ([3, 0], [[3], [5]])]
    threads = [threading.Thread(target=w.run_one_step, args=feeds[w.index]) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(45)
    assert not any(t.is_alive() for t in threads)
    accum = [op for op in workers[0].graph.get_operations()
             if op.type == "SparseConditionalAccumulator"]
    assert [op.device for op in accum] == ["/job:ps/task:0"]
    with tf.Session(workers[0].target, graph=workers[0].graph) as sess:
        emb, step = sess.run([workers[0].emb, workers[0].gs])
    assert step == 1
    assert emb.tolist() == [[-5, -5], [-1, -1], [0, 0], [-2, -2]]   # row 3: (1 + 3) / 2
