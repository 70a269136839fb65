"""SyncReplicasOptimizer's parts in one process: the token queue, the gradient accumulator
(waiting kernels that never block a device thread) and the graph the optimizer builds."""
import threading
import time

import numpy as np
import pytest

import tfteach as tf
from tfteach.ops.accumulator_ops import SparseConditionalAccumulator
from tfteach.ops.data_flow_ops import ConditionalAccumulator, FIFOQueue

pytestmark = pytest.mark.timeout(60)


def _in_thread(fn):
    """Run ``fn`` in a thread; returns (thread, box) where box gets its result or error."""
    box = {}

    def run():
        try:
            box["value"] = fn()
        except Exception as e:  # noqa: BLE001 (the test inspects it)
            box["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


# ---- the queue -----------------------------------------------------------------------------
def test_queue_is_first_in_first_out():
    q = FIFOQueue(10, tf.int64, shapes=())
    sess = tf.Session()
    sess.run(q.enqueue_many(([3, 1, 2],)))
    sess.run(q.enqueue(7))
    deq = q.dequeue()
    assert [sess.run(deq) for _ in range(4)] == [3, 1, 2, 7]
    assert sess.run(q.size()) == 0


def test_queue_with_two_components_and_dequeue_many():
    q = FIFOQueue(-1, [tf.float32, tf.int64], shapes=[[2], []], name="pairs")
    sess = tf.Session()
    sess.run(q.enqueue_many(([[1, 2], [3, 4], [5, 6]], [10, 20, 30])))
    xs, ys = sess.run(q.dequeue_many(2))
    assert xs.tolist() == [[1, 2], [3, 4]] and ys.tolist() == [10, 20]
    x, y = sess.run(q.dequeue())
    assert x.tolist() == [5, 6] and y == 30
    assert q.dequeue_many(2)[0].shape.as_list() == [2, 2]


def test_a_waiting_dequeue_gets_the_next_enqueue():
    q = FIFOQueue(-1, tf.int64, shapes=())
    deq, enq = q.dequeue(), q.enqueue(42)
    sess = tf.Session()
    t, box = _in_thread(lambda: sess.run(deq))
    time.sleep(0.2)
    assert t.is_alive()                 # waiting, without holding a device thread:
    sess.run(enq)                       # this step runs on the same CPU meanwhile
    t.join(10)
    assert box == {"value": 42}


def test_a_timed_out_dequeue_takes_nothing():
    q = FIFOQueue(-1, tf.int64, shapes=())
    deq = q.dequeue()
    sess = tf.Session()
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(deq, options=tf.RunOptions(timeout_in_ms=200))
    sess.run(q.enqueue(5))
    assert sess.run(deq) == 5           # the cancelled dequeue did not swallow it
    assert sess.run(q.size()) == 0


def test_a_full_queue_makes_enqueue_wait():
    q = FIFOQueue(1, tf.int64, shapes=())
    sess = tf.Session()
    sess.run(q.enqueue(1))
    with pytest.raises(tf.errors.DeadlineExceededError):
        sess.run(q.enqueue(2), options=tf.RunOptions(timeout_in_ms=200))
    assert sess.run(q.size()) == 1


def test_closed_queue_errors():
    q = FIFOQueue(-1, tf.int64, shapes=(), name="data")
    sess = tf.Session()
    sess.run(q.enqueue(1))
    sess.run(q.close())
    assert sess.run(q.dequeue()) == 1   # what is left can still be taken
    with pytest.raises(tf.errors.OutOfRangeError,
                       match=r"FIFOQueue 'data' is closed and has insufficient elements "
                             r"\(requested 1, current size 0\)"):
        sess.run(q.dequeue())
    with pytest.raises(tf.errors.CancelledError, match="FIFOQueue 'data' is closed."):
        sess.run(q.enqueue(2))


def test_closing_wakes_a_waiting_dequeue_with_out_of_range():
    q = FIFOQueue(-1, tf.int64, shapes=())
    deq, close = q.dequeue(), q.close()
    sess = tf.Session()
    t, box = _in_thread(lambda: sess.run(deq))
    time.sleep(0.1)
    sess.run(close)
    t.join(10)
    assert isinstance(box.get("error"), tf.errors.OutOfRangeError)


def test_shared_name_makes_one_queue():
    a = FIFOQueue(-1, tf.int64, shapes=(), name="a", shared_name="tokens")
    b = FIFOQueue(-1, tf.int64, shapes=(), name="b", shared_name="tokens")
    sess = tf.Session()
    sess.run(a.enqueue(9))
    assert sess.run(b.dequeue()) == 9


def test_closing_the_session_fails_a_waiting_dequeue():
    q = FIFOQueue(-1, tf.int64, shapes=())
    deq = q.dequeue()
    sess = tf.Session()
    t, box = _in_thread(lambda: sess.run(deq))
    time.sleep(0.1)
    sess.close()                        # the container is cleared: waiters are released
    t.join(10)
    assert isinstance(box.get("error"), tf.errors.CancelledError)


def test_queue_ops_are_colocated_with_the_queue():
    with tf.device("/cpu:0"):
        q = FIFOQueue(-1, tf.int64, shapes=())
    with tf.device("/gpu:0"):
        deq = q.dequeue()
    md = tf.RunMetadata()
    sess = tf.Session()
    sess.run(q.enqueue(1))
    sess.run(deq, run_metadata=md)
    assert md.placement[deq.op.name].endswith("CPU:0")


# ---- the accumulator -------------------------------------------------------------------------
def _accumulator():
    acc = ConditionalAccumulator(tf.float32, shape=[2], shared_name="w/grad_accum")
    grad = tf.placeholder(tf.float32, [2])
    step = tf.placeholder(tf.int64, [])
    return acc, grad, step, acc.apply_grad(grad, local_step=step)


def test_take_grad_averages_the_gradients_and_advances_the_step():
    acc, grad, step, apply = _accumulator()
    take = acc.take_grad(2)
    sess = tf.Session()
    t, box = _in_thread(lambda: sess.run(take))
    assert sess.run(apply.outputs[0], {grad: [1, 2], step: 0})
    time.sleep(0.1)
    assert t.is_alive()                # one of two gradients: still waiting
    assert sess.run(apply.outputs[0], {grad: [3, 6], step: 0})
    t.join(10)
    assert box["value"].tolist() == [2.0, 4.0]
    assert sess.run(acc.num_accumulated()) == 0


def test_a_stale_gradient_is_dropped():
    acc, grad, step, apply = _accumulator()
    sess = tf.Session()
    sess.run(acc.set_global_step(5))
    assert not sess.run(apply.outputs[0], {grad: [1, 1], step: 4})   # computed at step 4
    assert sess.run(acc.num_accumulated()) == 0
    assert sess.run(apply.outputs[0], {grad: [1, 1], step: 5})
    assert sess.run(acc.num_accumulated()) == 1


def test_take_grad_checks_its_argument():
    acc, _, _, _ = _accumulator()
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Argument num_required must be positive, but was 0"):
        tf.Session().run(acc.take_grad(0))


def test_apply_grad_checks_the_shape():
    acc = ConditionalAccumulator(tf.float32, shape=[2])
    with pytest.raises(ValueError, match="incompatible"):
        acc.apply_grad(tf.constant([1.0, 2.0, 3.0]), local_step=0)


def test_cancelling_waiting_takes_keeps_the_gradients():
    acc, grad, step, apply = _accumulator()
    take, cancel = acc.take_grad(2), acc.cancel_waiting_takes()
    sess = tf.Session()
    sess.run(apply, {grad: [1, 1], step: 0})
    t, box = _in_thread(lambda: sess.run(take))
    time.sleep(0.1)
    sess.run(cancel)
    t.join(10)
    assert isinstance(box.get("error"), tf.errors.CancelledError)
    assert sess.run(acc.num_accumulated()) == 1


# ---- the sparse accumulator ------------------------------------------------------------------
def _sparse_accumulator(shape=()):
    acc = SparseConditionalAccumulator(tf.float32, shape=shape, shared_name="emb/grad_accum")
    idx = tf.placeholder(tf.int64, [None])
    rows = tf.placeholder(tf.float32, [None, 2])
    step = tf.placeholder(tf.int64, [])
    return acc, (idx, rows, step), acc.apply_grad(idx, rows, local_step=step)


def test_sparse_take_averages_each_row_over_the_gradients_that_had_it():
    acc, (idx, rows, step), apply = _sparse_accumulator()
    take = acc.take_indexed_slices_grad(2)
    sess = tf.Session()
    t, box = _in_thread(lambda: sess.run(take))
    assert sess.run(apply.outputs[0], {idx: [1, 2], rows: [[1, 1], [2, 2]], step: 0})
    time.sleep(0.1)
    assert t.is_alive()                # one of two gradients: still waiting
    sess.run(apply, {idx: [2, 3], rows: [[4, 4], [6, 6]], step: 0})
    t.join(10)
    got = box["value"]
    assert got.indices.tolist() == [1, 2, 3]
    assert got.values.tolist() == [[1, 1], [3, 3], [6, 6]]      # row 2: (2 + 4) / 2
    assert got.dense_shape.tolist() == [-1, 2]                  # shape=(): first dim unknown
    assert sess.run(acc.num_accumulated()) == 0


def test_a_stale_sparse_gradient_is_dropped():
    acc, (idx, rows, step), apply = _sparse_accumulator()
    sess = tf.Session()
    sess.run(acc.set_global_step(3))
    assert not sess.run(apply.outputs[0], {idx: [0], rows: [[1, 1]], step: 2})
    assert sess.run(acc.num_accumulated()) == 0


def test_a_sparse_gradient_of_the_wrong_width_is_invalid_argument():
    acc = _sparse_accumulator(shape=[4, 2])[0]
    wide = acc.apply_grad(tf.constant([1]), tf.constant([[1.0, 1.0, 1.0]]), local_step=0)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Shape mismatch: expected values dim 1 to be 2, got 3"):
        tf.Session().run(wide)


def test_a_dense_and_a_sparse_accumulator_cannot_share_a_name():
    dense = ConditionalAccumulator(tf.float32, shape=[2], shared_name="grads")
    sparse = SparseConditionalAccumulator(tf.float32, shared_name="grads")
    sess = tf.Session()
    sess.run(dense.num_accumulated())
    with pytest.raises(tf.errors.InvalidArgumentError, match="Accumulator 'grads' is a "
                       "ConditionalAccumulator, not a SparseConditionalAccumulator"):
        sess.run(sparse.num_accumulated())


def test_dynamic_partition_and_report_uninitialized_variables():
    parts = tf.dynamic_partition(tf.constant([10, 20, 30, 40]), tf.constant([1, 0, 1, 1]), 2)
    sess = tf.Session()
    assert [p.tolist() for p in sess.run(parts)] == [[20], [10, 30, 40]]
    a = tf.Variable(1.0, name="a")
    tf.Variable(2.0, name="b")
    report = tf.report_uninitialized_variables()
    assert sess.run(report).tolist() == [b"a", b"b"]
    sess.run(a.initializer)
    assert sess.run(report).tolist() == [b"b"]


# ---- the optimizer's graph ------------------------------------------------------------------
def _model(device_fn=None):
    with tf.device(device_fn):
        w = tf.Variable(tf.zeros([3]), name="w")
        gs = tf.train.get_or_create_global_step()
        loss = tf.reduce_sum(w * tf.constant([1.0, 2.0, 3.0]))
    return w, gs, loss


def test_global_step_is_required():
    _, _, loss = _model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
    with pytest.raises(ValueError, match="Global step is required to check staleness"):
        opt.minimize(loss)
    with pytest.raises(ValueError, match="Must supply at least one variable"):
        opt.apply_gradients([], global_step=tf.train.get_global_step())


def test_chief_ops_exist_only_after_apply_gradients():
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
    with pytest.raises(ValueError, match="Should be called after apply_gradients()."):
        opt.get_chief_queue_runner()
    with pytest.raises(ValueError, match="should be called after apply_gradients()"):
        opt.get_init_tokens_op()
    with pytest.raises(ValueError, match="apply_gradient should be called before using the hook"):
        opt.make_session_run_hook(True).begin()


def test_too_few_initial_tokens():
    _, gs, loss = _model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                         replicas_to_aggregate=3, total_num_replicas=2)
    opt.minimize(loss, global_step=gs)
    with pytest.raises(ValueError, match=r"Too few tokens to finish the first step: 0 "
                                         r"\(given\) vs 1 \(needed\)"):
        opt.get_init_tokens_op(0)
    assert opt.get_init_tokens_op(1).type == "QueueEnqueueManyV2"


def test_the_graph_places_accumulators_with_their_variables():
    setter = tf.train.replica_device_setter(cluster={"ps": ["a:1", "b:1"], "worker": ["w:1"]},
                                            worker_device="/job:worker/task:0")
    w, gs, loss = _model(setter)
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2,
                                         total_num_replicas=3)
    with tf.device(setter):
        opt.minimize(loss, global_step=gs)
    g = tf.get_default_graph()
    accum = [op for op in g.get_operations() if op.type == "ConditionalAccumulator"]
    assert [(op.get_attr("shared_name"), op.device) for op in accum] == [
        ("w:0/grad_accum", w.device)]
    queue = g.get_operation_by_name("sync_token_q")
    assert queue.get_attr("shared_name") == "sync_token_q" and queue.device == gs.device
    local = tf.local_variables()
    assert [v.op.name for v in local] == ["sync_rep_local_step"]
    assert local[0].device == "/job:worker/task:0"
    assert opt._tokens_per_step == 3


def test_sync_training_in_one_process_averages_two_gradients():
    """One local session plays the chief; two runs of train_op make one global step."""
    w, gs, loss = _model()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0), 2)
    train = opt.minimize(loss, global_step=gs)
    hook = opt.make_session_run_hook(is_chief=True)
    with tf.train.MonitoredTrainingSession(hooks=[hook], stop_grace_period_secs=5) as sess:
        sess.run(train)
        sess.run(train)
        for _ in range(100):
            if sess.run(gs) == 1:
                break
            time.sleep(0.05)
        assert sess.run(gs) == 1
        np.testing.assert_allclose(sess.run(w), [-1.0, -2.0, -3.0])


def test_sync_training_of_an_embedding_averages_each_row_it_got():
    """An embedding's gradient goes through a SparseConditionalAccumulator: each row is the
    average of the gradients that had that row, applied to those rows only."""
    emb = tf.Variable(tf.zeros([4, 2]), name="emb")
    gs = tf.train.get_or_create_global_step()
    ids, weight = tf.placeholder(tf.int32, [2]), tf.placeholder(tf.float32, [2, 1])
    loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids) * weight)
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0), 2)
    train = opt.minimize(loss, global_step=gs)
    accums = [op for op in tf.get_default_graph().get_operations()
              if op.type.endswith("ConditionalAccumulator")]
    assert [(op.type, op.get_attr("shared_name")) for op in accums] == [
        ("SparseConditionalAccumulator", "emb:0/grad_accum")]
    hook = opt.make_session_run_hook(is_chief=True)
    with tf.train.MonitoredTrainingSession(hooks=[hook], stop_grace_period_secs=5) as sess:
        sess.run(train, {ids: [1, 3], weight: [[1], [1]]})
        sess.run(train, {ids: [3, 0], weight: [[3], [5]]})
        for _ in range(100):
            if sess.run(gs) == 1:
                break
            time.sleep(0.05)
        assert sess.run(gs) == 1
        np.testing.assert_allclose(sess.run(emb), [[-5, -5], [-1, -1], [0, 0], [-2, -2]])
