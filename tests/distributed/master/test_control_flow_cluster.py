"""Control flow on a cluster: a cond and a while_loop (and their gradients) placed on
/job:worker run there; a cond whose branches read variables on the ps sends the untaken
branch's dead tensors between the tasks as TF does (marked dead, never run); a loop on a
worker reads a ps variable; a while loop split over tasks (its body on the ps, or an update
of a ps variable in it) is refused with an UnimplementedError naming the loop and the tasks."""
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


def test_a_loop_on_a_worker_reads_a_ps_variable_in_every_iteration(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.5, name="loop_read_v")
    with tf.device("/job:worker/task:0"):
        _, total = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + v), [0, 0.0])
    with tf.Session(cluster.target()) as sess:
        sess.run(v.initializer)
        assert sess.run(total) == 4.5
        sess.run(v.assign(2.0))
        assert sess.run(total) == 6.0


def _refused(cluster, fetch, feed=None) -> str:
    with tf.Session(cluster.target()) as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.UnimplementedError) as info:
            sess.run(fetch, feed)
    return str(info.value)


def test_a_while_loop_split_over_tasks_is_refused(cluster):
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")

        def body(i, a):
            with tf.device("/job:ps/task:0"):
                return i + 1, a * x
        _, w = tf.while_loop(lambda i, a: i < 3, body, [0, 1.0], name="split_loop")
    said = _refused(cluster, w, {x: 2.0})
    assert "tf.while_loop 'split_loop' has ops on /job:worker/replica:0/task:0 and on " \
        "/job:ps/replica:0/task:0" in said, said
    assert "Hint:" in said


def test_updating_a_ps_variable_in_a_workers_loop_is_refused_as_a_loop_over_tasks(cluster):
    """The AssignAdd goes where its variable is (TF's ref rule, through the loop's
    RefEnter), so the loop spans both tasks."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="loop_updated_v")
    with tf.device("/job:worker/task:0"):
        def body(i):
            with tf.control_dependencies([tf.assign_add(v, 2.0)]):
                return i + 1
        n = tf.while_loop(lambda i: i < 3, body, [0], name="update_loop")
    said = _refused(cluster, n)
    assert "tf.while_loop 'update_loop' has ops on" in said, said
    assert "/job:ps/replica:0/task:0" in said and "/job:worker/replica:0/task:0" in said
