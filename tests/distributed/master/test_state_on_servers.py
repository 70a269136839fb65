"""State on a server, as TF 1.x keeps it: resource containers and ``Session.reset``,
``isolate_session_state``, the server's default session config (its placement log),
concurrent steps of one grpc:// session, and the partition graphs a step reports. Real
in-process servers on loopback."""
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import tfteach as tf
from tfteach.distributed.contract.engine_args import merge_config

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]
WAIT_S = 20


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    srv = tf.train.Server.create_local_server()
    yield srv
    srv.stop()


def _outcome(sess, fetch):
    """The fetched value, or the name of the error class."""
    try:
        return float(sess.run(fetch))
    except tf.errors.OpError as error:
        return type(error).__name__


def _three_variables():
    with tf.container("test0"):
        v0 = tf.Variable(1.0, name="v0")
    with tf.container("test1"):
        v1 = tf.Variable(2.0, name="v1")
    v2 = tf.Variable(3.0, name="v2")
    return v0, v1, v2


def _initialized(target, variables):
    with tf.Session(target) as sess:
        sess.run(tf.variables_initializer(variables))


def _outcomes(target, fetches):
    with tf.Session(target) as sess:
        return [_outcome(sess, f) for f in fetches]


# ---- containers and reset --------------------------------------------------------------------
def test_tf_container_sets_the_container_attr_of_stateful_ops():
    with tf.container("experiment"):
        v = tf.Variable(1.0, name="v")
        q = tf.FIFOQueue(2, tf.float32)
        c = tf.constant(1.0)
    assert v.op.get_attr("container") == "experiment"
    assert q.queue_ref.op.get_attr("container") == "experiment"
    assert "container" not in c.op.attrs
    assert tf.Variable(2.0).op.get_attr("container") == ""


def test_variables_outlive_sessions_on_a_server(server):
    variables = _three_variables()
    _initialized(server.target, variables)
    assert _outcomes(server.target, variables) == [1.0, 2.0, 3.0]


def test_reset_with_containers_clears_only_those(server):
    variables = _three_variables()
    _initialized(server.target, variables)
    tf.Session.reset(server.target, ["test0"])
    assert _outcomes(server.target, variables) == ["FailedPreconditionError", 2.0, 3.0]


def test_reset_without_containers_clears_the_default_container(server):
    variables = _three_variables()
    _initialized(server.target, variables)
    tf.Session.reset(server.target)
    assert _outcomes(server.target, variables) == [1.0, 2.0, "FailedPreconditionError"]


def test_reset_empties_a_queue_in_its_container(server):
    with tf.container("queues"):
        q = tf.FIFOQueue(10, tf.float32, shared_name="q")
    enqueue, size = q.enqueue(1.0), q.size()
    with tf.Session(server.target) as sess:
        sess.run(enqueue)
    tf.Session.reset(server.target, ["queues"])
    assert _outcomes(server.target, [size]) == [0.0]


def test_reset_clears_the_container_on_every_task(engine_cluster):
    with tf.device("/job:ps/task:0"), tf.container("ps_state"):
        v = tf.Variable(1.0, name="v")
    target = engine_cluster["worker", 0].target
    _initialized(target, [v])
    tf.Session.reset(target, ["ps_state"])
    assert _outcomes(engine_cluster["worker", 1].target, [v]) == ["FailedPreconditionError"]


# ---- isolate_session_state -------------------------------------------------------------------
ISOLATED = tf.ConfigProto(isolate_session_state=True)


def test_an_isolated_session_does_not_see_other_sessions_variables(server):
    w = tf.Variable(0.0, name="w")
    shared = tf.Session(server.target)
    shared.run(w.initializer)
    isolated = tf.Session(server.target, config=ISOLATED)
    assert _outcome(isolated, w) == "FailedPreconditionError"
    isolated.run(w.assign(5.0))
    assert (shared.run(w), isolated.run(w)) == (0.0, 5.0)


def test_two_isolated_sessions_do_not_share_either(server):
    w = tf.Variable(0.0, name="w")
    first = tf.Session(server.target, config=ISOLATED)
    first.run(w.assign(5.0))
    assert _outcome(tf.Session(server.target, config=ISOLATED), w) == "FailedPreconditionError"


def test_isolation_holds_on_the_other_tasks_too(engine_cluster):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(0.0, name="w")
    target = engine_cluster["worker", 0].target
    tf.Session(target).run(w.initializer)
    isolated = tf.Session(target, config=ISOLATED)
    isolated.run(w.assign(3.0))
    assert _outcomes(target, [w]) == [0.0]


def test_closing_an_isolated_session_releases_its_state(server):
    w = tf.Variable(0.0, name="w")
    isolated = tf.Session(server.target, config=ISOLATED)
    isolated.run(w.assign(5.0))
    isolated.run(w + 1.0)       # the graph grew: the session placed and registered again
    assert server.engine._isolated
    isolated.close()
    assert not server.engine._isolated


def test_queue_runners_of_an_isolated_session_fill_its_own_queue(server):
    q = tf.train.input_producer(tf.constant([1, 2, 3]), num_epochs=1, shuffle=False)
    x = q.dequeue()
    with tf.Session(server.target, config=ISOLATED) as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        got = [int(sess.run(x, options=tf.RunOptions(timeout_in_ms=WAIT_S * 1000)))
               for _ in range(3)]
        coord.request_stop()
        coord.join(threads)
    assert got == [1, 2, 3]


# ---- the server's config ---------------------------------------------------------------------
def test_the_servers_config_is_merged_into_a_sessions_config():
    merged = merge_config(tf.ConfigProto(allow_soft_placement=True, device_filters=["/job:a"]),
                          tf.ConfigProto(log_device_placement=True, device_filters=["/job:b"]))
    assert merged.log_device_placement and merged.allow_soft_placement
    assert merged.device_filters == ["/job:a", "/job:b"]


SERVER_WITH_LOG = ("import tfteach as tf; s = tf.train.Server.create_local_server("
                   "config=tf.ConfigProto(log_device_placement=True)); print(s.target, "
                   "flush=True); s.join()")


def test_a_servers_log_device_placement_logs_on_the_servers_stderr(capsys):
    task = subprocess.Popen([sys.executable, "-c", SERVER_WITH_LOG], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[3])
    try:
        target = task.stdout.readline().strip()
        a = tf.constant(1.0, name="aaa")
        b = tf.add(a, a, name="bbb")
        with tf.Session(target) as sess:
            assert sess.run(b) == 2.0
    finally:
        task.terminate()
        _, err = task.communicate(timeout=30)
    assert "bbb: (Add): /job:localhost/replica:0/task:0/device:" in err
    assert "bbb: (Add)" not in capsys.readouterr().out


# ---- concurrent steps ------------------------------------------------------------------------
def _dequeue_in_thread(sess, dequeue):
    got = []
    thread = threading.Thread(target=lambda: got.append(_outcome_of_run(sess, dequeue)))
    thread.start()
    return thread, got


def _outcome_of_run(sess, fetch):
    try:
        return float(sess.run(fetch, options=tf.RunOptions(timeout_in_ms=WAIT_S * 1000)))
    except tf.errors.OpError as error:
        return type(error).__name__


def _wait_until_a_step_runs(master_server):
    deadline = time.monotonic() + WAIT_S
    while not any(s.running for s in master_server.engine._sessions.values()):
        assert time.monotonic() < deadline, "the dequeue step never started"
        time.sleep(0.01)


def test_a_step_runs_while_another_step_of_the_session_waits_in_a_dequeue(server):
    q = tf.FIFOQueue(10, tf.float32)
    dequeue, enqueue = q.dequeue(), q.enqueue(7.0)
    sess = tf.Session(server.target)
    thread, got = _dequeue_in_thread(sess, dequeue)
    _wait_until_a_step_runs(server)
    sess.run(enqueue, options=tf.RunOptions(timeout_in_ms=WAIT_S * 1000))
    thread.join(WAIT_S * 2)
    assert got == [7.0]


def test_concurrent_steps_through_one_session_meet_in_a_queue_on_another_task(engine_cluster):
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(10, tf.float32)
    dequeue, enqueue = q.dequeue() * 2.0, q.enqueue(7.0)
    master = engine_cluster["worker", 0]
    sess = tf.Session(master.target)
    thread, got = _dequeue_in_thread(sess, dequeue)
    _wait_until_a_step_runs(master)
    sess.run(enqueue, options=tf.RunOptions(timeout_in_ms=WAIT_S * 1000))
    thread.join(WAIT_S * 2)
    assert got == [14.0]


# ---- partition graphs ------------------------------------------------------------------------
def _ps_variable_times_fed_x():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(2.0, name="v")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, name="x")
        y = tf.multiply(v, x, name="y")
    return v, x, y


def _graphs_of_step(sess, fetch, feeds=None):
    md = tf.RunMetadata()
    sess.run(fetch, feeds, options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
    return md.partition_graphs


def test_output_partition_graphs_gives_one_graph_per_device_of_each_task(engine_cluster):
    v, x, y = _ps_variable_times_fed_x()
    with tf.Session(engine_cluster["worker", 0].target) as sess:
        sess.run(v.initializer)
        graphs = _graphs_of_step(sess, y, {x: 3.0})
    ops = [{n.name: n.op for n in g.node} for g in graphs]
    assert [{n.device for n in g.node} for g in graphs] == [
        {"/job:ps/replica:0/task:0/device:CPU:0"}, {"/job:worker/replica:0/task:0/device:CPU:0"}]
    assert {"v": "VariableV2", "v/read": "Identity"}.items() <= ops[0].items()
    assert "_Send" in ops[0].values() and "_Recv" in ops[1].values()
    assert ops[1]["y"] == "Mul" and {"_Arg", "_Retval"} <= set(ops[1].values())


def test_partition_graphs_of_a_step_on_one_task_hold_only_that_task(engine_cluster):
    v, _, _ = _ps_variable_times_fed_x()
    with tf.Session(engine_cluster["worker", 0].target) as sess:
        graphs = _graphs_of_step(sess, v.initializer)
    assert [sorted(n.name for n in g.node) for g in graphs] == [["v", "v/Assign",
                                                                 "v/initial_value"]]


def test_partition_graphs_are_left_empty_unless_asked(engine_cluster):
    v, x, y = _ps_variable_times_fed_x()
    md = tf.RunMetadata()
    with tf.Session(engine_cluster["worker", 0].target) as sess:
        sess.run(v.initializer)
        sess.run(y, {x: 3.0}, run_metadata=md)
    assert md.partition_graphs == []
