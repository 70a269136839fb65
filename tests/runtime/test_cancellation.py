"""Cancellation comes from the top: the executor ends a step's waiting kernels when the step
fails, is cancelled (``Executor.cancel``) or passes its deadline; the kernels never look
into the runtime, and no thread polls them."""
from __future__ import annotations

import threading
import time

import pytest

import tfteach as tf
from tfteach.framework.kernel import Pending


def _queue_and_dequeue(tf_module):
    with tf_module.device("/cpu:0"):
        q = tf_module.FIFOQueue(1, tf_module.float32, shapes=[[]], name="q")
        return q, q.dequeue()


def _dequeue_in_step(sess, deq, step_id):
    """Run ``deq`` as step ``step_id`` on a thread; the box gets its value or error."""
    plan = sess._plan([deq], [], {})
    box: dict = {}

    def run():
        try:
            box["value"] = sess._executor.run(plan, {}, sess.resources, step_id=step_id)[0]
        except tf.errors.OpError as e:
            box["error"] = e
    thread = threading.Thread(target=run)
    thread.start()
    return thread, box


def test_a_blocked_dequeue_times_out_naming_the_dequeue():
    _, deq = _queue_and_dequeue(tf)
    with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting in q_Dequeue"):
        tf.Session().run(deq, options=tf.RunOptions(timeout_in_ms=100))


def test_operation_timeout_in_ms_times_out_a_blocked_dequeue():
    _, deq = _queue_and_dequeue(tf)
    sess = tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=100))
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(deq)


@pytest.mark.conformance
def test_a_blocked_dequeue_times_out_as_in_tf():
    tf1 = pytest.importorskip("tensorflow.compat.v1")
    tf1.disable_v2_behavior()
    with tf1.Graph().as_default():
        _, deq = _queue_and_dequeue(tf1)
        with tf1.Session() as sess, pytest.raises(tf1.errors.DeadlineExceededError):
            sess.run(deq, options=tf1.RunOptions(timeout_in_ms=100))


def test_cancelling_a_step_ends_its_waiting_dequeue_and_takes_nothing():
    q, deq = _queue_and_dequeue(tf)
    sess = tf.Session()
    thread, box = _dequeue_in_step(sess, deq, step_id=7)
    time.sleep(0.2)
    sess._executor.cancel(7, tf.errors.AbortedError("Step 7 was aborted"))
    thread.join(5)
    assert isinstance(box.get("error"), tf.errors.CancelledError)
    sess.run(q.enqueue(3.0))
    assert sess.run(q.size()) == 1          # nothing was lost to the cancelled step


def test_a_step_cancelled_before_it_starts_fails_at_once():
    _, deq = _queue_and_dequeue(tf)
    sess = tf.Session()
    sess._executor.cancel(8, tf.errors.AbortedError("Step 8 was aborted"))
    thread, box = _dequeue_in_step(sess, deq, step_id=8)
    thread.join(5)
    assert isinstance(box.get("error"), tf.errors.AbortedError)


_CANCELLED = threading.Event()


def _waits_for_cancel(ctx, x):
    pending = Pending()
    pending.on_cancel = _CANCELLED.set
    return pending


def _fails_later(ctx, x):
    time.sleep(0.1)
    raise ValueError("boom")


def _register(name, kernel, **facts):
    from tfteach.framework import registry
    if name not in registry.registered_types():
        registry.register_op(name, lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
                             kernel, **facts)


def test_a_failed_node_cancels_the_waiting_kernels_of_its_step():
    _CANCELLED.clear()
    _register("_TestWaitsForCancel", _waits_for_cancel, is_async=True)
    _register("_TestFailsLater", _fails_later)
    g = tf.get_default_graph()
    with tf.device("/cpu:0"):
        w = g.create_op("_TestWaitsForCancel", [tf.constant(1.0)], {"T": tf.float32}).outputs[0]
    with tf.device("/gpu:0"):           # another thread: it fails while the other waits
        f = g.create_op("_TestFailsLater", [tf.constant(2.0)], {"T": tf.float32}).outputs[0]
    with pytest.raises(tf.errors.UnknownError, match="boom"):
        tf.Session().run([w, f])
    assert _CANCELLED.is_set()


def test_no_thread_watches_waiting_kernels():
    _, deq = _queue_and_dequeue(tf)
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(tf.errors.DeadlineExceededError):
        tf.Session().run(deq, options=tf.RunOptions(timeout_in_ms=100))
    new = [t.name for t in threading.enumerate() if t.ident not in before]
    assert all(name.startswith("tfteach-") and "watchdog" not in name for name in new), new



def _counter_step(tf_module):
    """An inline step (run as a compiled program): v += 1; and what it changes."""
    v = tf_module.Variable(1.0, name="v")
    return [v.initializer], v.assign_add(1.0), v


def _dequeue_in_a_cond(tf_module):
    """A control-flow step (run in frames) that takes the element enqueued first."""
    q, deq = _queue_and_dequeue(tf_module)
    step = tf_module.cond(tf_module.constant(True), lambda: deq, lambda: tf_module.constant(0.0))
    return [q.enqueue(3.0)], step, q.size()


@pytest.mark.parametrize("build", [_counter_step, _dequeue_in_a_cond], ids=["program", "frames"])
def test_a_step_cancelled_before_it_starts_changes_nothing_on_any_path(build):
    """A part whose step its master aborted before it started (a client gone) fails at once
    on every path of the executor, before any kernel runs."""
    setup, step, observed = build(tf)
    sess = tf.Session()
    sess.run(setup)
    before = sess.run(observed)
    sess._executor.cancel(9, tf.errors.AbortedError("Step 9 was aborted"))
    with pytest.raises(tf.errors.AbortedError):
        sess._executor.run(sess._plan([step], [], {}), {}, sess.resources, step_id=9)
    assert sess.run(observed) == before
