"""Control flow on a cluster task: a cond and a while_loop (and their gradients) placed on
/job:worker run there; a tensor from inside a branch that would cross tasks is refused with
UnimplementedError (no dead-tensor signal over the wire), and reading the variable on the
worker first makes the same cond run."""
import pytest

import tfteach as tf
from tfteach.experiments import InProcessCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def test_cond_and_while_loop_on_a_worker():
    with InProcessCluster(ps=1, workers=1) as cluster:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.5)
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [], name="x")
            y = tf.cond(x > 0, lambda: x * 2.0, lambda: x - 1.0)
            dy = tf.gradients(y, x)[0]
            _, w = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, 1.0])
            dw = tf.gradients(w, x)[0]
            split = tf.cond(x > 0, lambda: v * 2.0, lambda: x)
            r = tf.identity(v)
            local = tf.cond(x > 0, lambda: r * 2.0, lambda: x)
        sess = tf.Session(cluster.target())
        sess.run(v.initializer)
        assert sess.run([y, dy], {x: 3.0}) == [6.0, 2.0]
        assert sess.run([y, dy], {x: -3.0}) == [-4.0, 1.0]
        assert sess.run([w, dw], {x: 2.0}) == [8.0, 12.0]
        with pytest.raises(tf.errors.UnimplementedError, match="across tasks") as info:
            sess.run(split, {x: 3.0})
        assert "Hint:" in str(info.value) and "tf.identity" in str(info.value)
        assert sess.run(local, {x: 3.0}) == 3.0 and sess.run(local, {x: -2.0}) == -2.0
