"""Waiting kernels on a cluster task: a dequeue or take_grad that waits on the ps never holds
up the task, and a step that is cut short (timeout, a failed part, a reset) takes nothing."""
import threading
import time

import pytest

import tfteach as tf
from tfteach.experiments import InProcessCluster
from tfteach.ops.data_flow_ops import FIFOQueue

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


@pytest.fixture
def cluster():
    with InProcessCluster(ps=1, workers=1) as c:
        yield c


def _queue():
    with tf.device("/job:ps/task:0"):
        q = FIFOQueue(-1, tf.int64, shapes=(), name="tokens", shared_name="tokens")
    return q, q.dequeue(), q.enqueue(7)


def test_a_timed_out_dequeue_on_the_ps_takes_nothing(cluster):
    q, deq, enq = _queue()
    sess = tf.Session(cluster.target())
    with pytest.raises(tf.errors.DeadlineExceededError, match="tokens"):
        sess.run(deq, options=tf.RunOptions(timeout_in_ms=300))
    sess.run(enq)
    assert sess.run(deq) == 7
    assert sess.run(q.size()) == 0


def test_a_failed_part_of_the_step_cancels_the_waiting_dequeue(cluster):
    """The worker's part fails at once; the master aborts the step, which ends the ps
    part's waiting dequeue instead of leaving it (and that registered graph) stuck."""
    _, deq, enq = _queue()
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [None])
        reshaped = tf.reshape(x, [3])
    sess = tf.Session(cluster.target())
    with pytest.raises(tf.errors.OpError, match="reshape"):
        sess.run([deq, reshaped], {x: [1.0, 2.0, 3.0, 4.0]})
    sess.run(enq)
    token, _ = sess.run([deq, reshaped], {x: [1.0, 2.0, 3.0]})   # the same step again
    assert token == 7


def test_a_dequeue_on_the_ps_leaves_the_tasks_free(cluster):
    _, deq, enq = _queue()
    waiter = tf.Session(cluster.target())
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("token", waiter.run(deq)))
    t.start()
    time.sleep(0.3)
    other = tf.Session(cluster.target())
    with tf.device("/job:ps/task:0"):
        busy = tf.constant(2.0) * 3.0
    assert other.run(busy) == 6.0          # the ps keeps running other steps meanwhile
    other.run(enq)
    t.join(10)
    assert box == {"token": 7}


def test_a_reset_releases_a_waiting_dequeue(cluster):
    _, deq, _ = _queue()
    box = {}

    def wait():
        try:
            tf.Session(cluster.target()).run(deq)
        except tf.errors.OpError as e:
            box["error"] = e
    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    tf.Session.reset(cluster.target())
    t.join(10)
    assert not t.is_alive()
    assert isinstance(box.get("error"), (tf.errors.CancelledError, tf.errors.AbortedError))
