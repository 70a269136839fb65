"""Control flow on a cluster: a cond and a while_loop (and their gradients) placed on
/job:worker run there; a cond whose branches read variables on the ps sends the untaken
branch's dead tensors between the tasks as TF does (marked dead, never run); a while loop
split over tasks is refused with UnimplementedError."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.experiments import InProcessCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def cluster():
    with InProcessCluster(ps=1, workers=1) as c:
        yield c


def test_cond_and_while_loop_on_a_worker(cluster):
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")
        y = tf.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)
        dy = tf.gradients(y, x)[0]
        _, w = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, 1.0])
        dw = tf.gradients(w, x)[0]
    with tf.Session(cluster.target()) as sess:
        assert sess.run([y, dy], {x: 3.0}) == [6.0, 2.0]
        assert sess.run([y, dy], {x: -3.0}) == [-4.0, 1.0]
        assert sess.run([w, dw], {x: 2.0}) == [8.0, 12.0]


def test_a_cond_reading_ps_variables_sends_dead_tensors_between_tasks(cluster):
    """The Switch of a ps variable sits on the ps (colocated with it); the branch on the
    worker gets a live or a dead tensor; the untaken branch's assign on the ps never runs."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.5, name="cf_v")
        hits = tf.Variable(0.0, name="cf_hits")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")
        y = tf.cond(x > 0, lambda: v * x, lambda: tf.assign_add(hits, 1.0) + x)
        z = tf.cond(x > 0, lambda: v * x, lambda: x)
        dz = tf.gradients(z, [x, v])
    with tf.Session(cluster.target()) as sess:
        sess.run([v.initializer, hits.initializer])
        assert sess.run(y, {x: 2.0}) == 3.0 and sess.run(hits) == 0.0
        assert sess.run([z] + dz, {x: 2.0}) == [3.0, 1.5, 2.0]
        assert sess.run([z] + dz, {x: -2.0}) == [-2.0, 1.0, 0.0]
        assert sess.run(y, {x: -2.0}) == -1.0 and sess.run(hits) == 1.0


def test_batch_normalization_with_a_training_tensor_and_variables_on_the_ps(cluster):
    with tf.device(tf.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker")):
        x = tf.placeholder(tf.float32, [4, 3])
        training = tf.placeholder(tf.bool, [])
        y = tf.layers.batch_normalization(x, momentum=0.5, training=training, name="cf_bn")
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    with tf.Session(cluster.target()) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y, {x: data, training: False}),
                                   data / np.sqrt(1.001), rtol=1e-5)
        sess.run([y, updates], {x: data, training: True})
        np.testing.assert_allclose(sess.run("cf_bn/moving_mean:0"), 0.5 * data.mean(0),
                                   rtol=1e-5)


def test_a_while_loop_split_over_tasks_is_refused(cluster):
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")

        def body(i, a):
            with tf.device("/job:ps/task:0"):
                return i + 1, a * x
        _, w = tf.while_loop(lambda i, a: i < 3, body, [0, 1.0])
    with tf.Session(cluster.target()) as sess:
        with pytest.raises(tf.errors.UnimplementedError, match="while_loop") as info:
            sess.run(w, {x: 2.0})
    assert "Hint:" in str(info.value)
