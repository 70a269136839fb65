"""MonitoredTrainingSession, hooks, Coordinator, QueueRunner and Supervisor in one process."""
import threading
import time

import numpy as np
import pytest

import tfteach as tf
from tfteach.ops.data_flow_ops import FIFOQueue

pytestmark = pytest.mark.timeout(60)


def _model():
    w = tf.Variable(5.0, name="w")
    gs = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w), global_step=gs)
    return w, gs, train


def _train(sess, train, gs):
    steps = []
    while not sess.should_stop():
        steps.append(int(sess.run([train, gs])[1]))
    return steps


def test_stop_at_step_hook_stops_at_the_last_step():
    _, gs, train = _model()
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(last_step=7)]) as sess:
        ran = _train(sess, train, gs)
    assert len(ran) == 7


def test_run_after_a_stop_is_an_error():
    _, _, train = _model()
    with tf.train.MonitoredTrainingSession(hooks=[tf.train.StopAtStepHook(num_steps=1)]) as sess:
        sess.run(train)
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="Run called even after should_stop requested."):
            sess.run(train)


def test_the_chief_restores_the_latest_checkpoint(tmp_path):
    _, gs, train = _model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=3,
                                           hooks=[tf.train.StopAtStepHook(last_step=10)]) as sess:
        _train(sess, train, gs)
    assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-10")
    saved = {int(p.name.split("-")[1].split(".")[0]) for p in tmp_path.glob("model.ckpt-*")}
    assert saved == {0, 3, 6, 9, 10}             # at the start, every 3 steps, at the end
    tf.reset_default_graph()
    _, gs, train = _model()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           hooks=[tf.train.StopAtStepHook(num_steps=5)]) as sess:
        ran = _train(sess, train, gs)
    # continued from step 10, five more steps; a global step fetched with the train op shows
    # the step's increment (TF's read aliases the variable, which the step updates in place)
    assert ran[0] == 11 and len(ran) == 5
    assert abs(tf.train.load_variable(str(tmp_path), "w") - 5.0 * 0.8 ** 15) < 1e-4


def test_the_chief_creates_a_missing_nested_checkpoint_dir(tmp_path):
    _, gs, train = _model()
    checkpoint_dir = str(tmp_path / "runs" / "a" / "b")
    with tf.train.MonitoredTrainingSession(checkpoint_dir=checkpoint_dir, save_checkpoint_steps=1,
                                           hooks=[tf.train.StopAtStepHook(last_step=2)]) as sess:
        _train(sess, train, gs)
    assert tf.train.latest_checkpoint(checkpoint_dir).endswith("model.ckpt-2")


def test_a_checkpoint_saver_hook_creates_its_directory_at_begin(tmp_path):
    tf.train.get_or_create_global_step()
    hook = tf.train.CheckpointSaverHook(str(tmp_path / "new" / "dir"), save_steps=1)
    hook.begin()
    assert (tmp_path / "new" / "dir").is_dir()


def test_no_saving_and_no_step_counting_leaves_the_directory_uncreated(tmp_path):
    _, gs, train = _model()
    checkpoint_dir = tmp_path / "never"
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(checkpoint_dir),
                                           save_checkpoint_secs=None, save_summaries_steps=None,
                                           save_summaries_secs=None, log_step_count_steps=None,
                                           hooks=[tf.train.StopAtStepHook(last_step=1)]) as sess:
        _train(sess, train, gs)
    assert not checkpoint_dir.exists()


class _Recorder(tf.train.SessionRunHook):
    def __init__(self, fetch=None, stop_after=None):
        self.calls, self.values, self._fetch, self._stop_after = [], [], fetch, stop_after

    def begin(self):
        self.calls.append("begin")

    def after_create_session(self, session, coord):
        self.calls.append("after_create_session")

    def before_run(self, run_context):
        self.calls.append("before_run")
        return tf.train.SessionRunArgs(self._fetch) if self._fetch is not None else None

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.values.append(run_values.results)
        if self._stop_after and len(self.values) >= self._stop_after:
            run_context.request_stop()

    def end(self, session):
        self.calls.append("end")


def test_hooks_are_called_in_order_and_get_their_fetches():
    _, gs, train = _model()
    hook = _Recorder(fetch=gs, stop_after=2)
    with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        _train(sess, train, gs)
    assert hook.calls == ["begin", "after_create_session", "before_run", "after_run",
                          "before_run", "after_run", "end"]
    assert [int(v) for v in hook.values] == [1, 2]    # after each step's increment, as in TF


def test_end_is_not_called_when_the_loop_raises():
    _, _, train = _model()
    hook = _Recorder()
    with pytest.raises(ZeroDivisionError), tf.train.MonitoredTrainingSession(
            hooks=[hook]) as sess:
        sess.run(train)
        raise ZeroDivisionError
    assert "end" not in hook.calls


def test_out_of_range_ends_the_loop_quietly():
    q = FIFOQueue(-1, tf.float32, shapes=())
    _model()
    fill, close, take = q.enqueue(1.0), q.close(), q.dequeue()
    taken = []
    with tf.train.MonitoredTrainingSession() as sess:
        sess.run(fill)
        sess.run(close)
        while True:
            taken.append(sess.run(take))   # the second one: OutOfRangeError, end of data
    assert taken == [1.0]


def test_the_graph_is_finalized_while_training():
    _, _, train = _model()
    with tf.train.MonitoredTrainingSession() as sess:
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(1.0)
        sess.run(train)
    tf.constant(1.0)                   # editable again afterwards


def test_logging_tensor_hook_prints(capsys):
    _, gs, train = _model()
    hooks = [tf.train.LoggingTensorHook({"step": gs}, every_n_iter=2),
             tf.train.StopAtStepHook(last_step=3)]
    with tf.train.MonitoredTrainingSession(hooks=hooks) as sess:
        _train(sess, train, gs)
    assert capsys.readouterr().out.splitlines() == ["step = 1", "step = 3"]   # as TF's


def test_nan_loss_fails_the_training():
    _, _, train = _model()
    loss = tf.placeholder(tf.float32, [], name="loss")
    with pytest.raises(tf.train.NanLossDuringTrainingError), \
            tf.train.MonitoredTrainingSession(hooks=[tf.train.NanTensorHook(loss)]) as sess:
        sess.run(train, {loss: 1.0})
        sess.run(train, {loss: float("nan")})


# ---- Coordinator and QueueRunner -------------------------------------------------------------
def test_coordinator_reraises_a_threads_error():
    coord = tf.train.Coordinator()

    def work():
        with coord.stop_on_exception():
            raise ValueError("boom")
    threads = [threading.Thread(target=work)]
    for t in threads:
        t.start()
    with pytest.raises(ValueError, match="boom"):
        coord.join(threads)
    assert coord.should_stop()


def test_coordinator_out_of_range_is_a_clean_stop():
    coord = tf.train.Coordinator()
    coord.request_stop(tf.errors.OutOfRangeError("done"))
    coord.join([])
    assert coord.should_stop()


def test_coordinator_complains_about_threads_that_do_not_stop():
    coord = tf.train.Coordinator()
    stuck = threading.Thread(target=time.sleep, args=(2,), name="stuck", daemon=True)
    stuck.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="Coordinator stopped with threads still running: stuck"):
        coord.join([stuck], stop_grace_period_secs=0.1)


def test_queue_runner_feeds_a_queue_until_stopped():
    q = FIFOQueue(4, tf.float32, shapes=())
    with tf.device("/cpu:0"):
        counter = tf.Variable(0.0, name="counter")
        enqueue = q.enqueue(tf.assign_add(counter, 1.0))
    qr = tf.train.QueueRunner(q, [enqueue])
    tf.train.add_queue_runner(qr)
    sess = tf.Session()
    sess.run(counter.initializer)
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    got = [sess.run(q.dequeue()) for _ in range(10)]
    assert got == [float(i) for i in range(1, 11)]
    coord.request_stop()                   # the runner is blocked on a full queue:
    coord.join(threads, stop_grace_period_secs=5)   # its cancel op wakes it
    assert not any(t.is_alive() for t in threads)


def test_queue_runner_closes_the_queue_when_its_input_ends():
    source = FIFOQueue(-1, tf.float32, shapes=(), name="source")
    sink = FIFOQueue(-1, tf.float32, shapes=(), name="sink")
    qr = tf.train.QueueRunner(sink, [sink.enqueue(source.dequeue() * 10.0)])
    sess = tf.Session()
    sess.run(source.enqueue_many(([1.0, 2.0],)))
    sess.run(source.close())
    coord = tf.train.Coordinator()
    threads = qr.create_threads(sess, coord, start=True)
    assert sess.run(sink.dequeue_many(2)).tolist() == [10.0, 20.0]
    with pytest.raises(tf.errors.OutOfRangeError):
        sess.run(sink.dequeue())           # closed by the runner after source ran out
    coord.request_stop()
    coord.join(threads, stop_grace_period_secs=5)


# ---- Supervisor --------------------------------------------------------------------------------
def test_supervisor_initializes_saves_and_restores(tmp_path):
    w, gs, train = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), global_step=gs, save_model_secs=0.2)
    with sv.managed_session() as sess:
        for _ in range(5):
            sess.run(train)
        time.sleep(0.5)
        assert not sv.should_stop()
    assert tf.train.latest_checkpoint(str(tmp_path)) is not None
    tf.reset_default_graph()
    w, gs, train = _model()
    sv = tf.train.Supervisor(logdir=str(tmp_path), global_step=gs, save_model_secs=0)
    with sv.managed_session() as sess:
        assert sess.run(gs) == 5
        np.testing.assert_allclose(sess.run(w), 5.0 * 0.8 ** 5, rtol=1e-5)


def test_supervisor_finalizes_the_graph_and_reports_errors():
    _, _, train = _model()
    sv = tf.train.Supervisor(logdir=None)
    with pytest.raises(RuntimeError, match="finalized"):
        tf.constant(1.0)
    with pytest.raises(ValueError, match="in the loop"), sv.managed_session() as sess:
        sess.run(train)
        raise ValueError("in the loop")
    assert sv.should_stop()


def test_session_manager_gives_up_waiting_with_deadline_exceeded():
    tf.Variable(1.0, name="never_initialized")
    manager = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                      recovery_wait_secs=0.05)
    with pytest.raises(tf.errors.DeadlineExceededError, match="not ready after waiting"):
        manager.wait_for_session("", max_wait_secs=0.2)
