"""grpc:// sessions on real in-process servers over loopback: partitioning, transfers,
containers that outlive sessions, device filters, placement logs and failures."""
import numpy as np
import pytest

import tfteach as tf

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


@pytest.fixture
def cluster(engine_cluster):
    return engine_cluster


def test_seed_host_and_workers_example(cluster):
    """matmul on one task, log on another, summed where the session lives."""
    with tf.device("/job:worker/task:0"):
        a = tf.constant([[1.0, 2.0]], name="a")
        b = tf.constant([[3.0], [4.0]], name="b")
        c = tf.constant(5.0, name="c")
        mm = tf.matmul(a, b)
    with tf.device("/job:worker/task:1"):
        lg = tf.log(100.0 + c)
    out = mm + lg
    with tf.Session(cluster["worker", 0].target) as sess:
        np.testing.assert_allclose(sess.run(out), [[11.0 + np.log(105.0)]], rtol=1e-6)


def test_placement_log_prints_full_task_names(cluster, capsys):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:1"):
        y = v * 2.0
    sess = tf.Session(cluster["worker", 0].target, config=tf.ConfigProto(log_device_placement=True))
    sess.run(v.initializer)
    assert sess.run(y) == 2.0
    out = capsys.readouterr().out
    assert "v: (VariableV2): /job:ps/replica:0/task:0/device:CPU:0" in out
    assert "mul: (Mul): /job:worker/replica:0/task:1/device:CPU:0" in out


def test_ops_without_device_go_to_the_masters_task(cluster):
    c = tf.constant(1.0, name="c") + 1.0
    md = tf.RunMetadata()
    tf.Session(cluster["worker", 1].target).run(c, run_metadata=md)
    assert md.placement[c.op.name] == "/job:worker/replica:0/task:1/device:CPU:0"


def test_variables_outlive_sessions_until_reset(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    target = cluster["worker", 0].target
    with tf.Session(target) as s1:
        s1.run(v.initializer)
        s1.run(v.assign(7.0))
    with tf.Session(cluster["worker", 1].target) as s2:
        assert s2.run(v) == 7.0
    tf.Session.reset(target)
    with tf.Session(target) as s3, pytest.raises(tf.errors.FailedPreconditionError,
                                                 match="uninitialized value v"):
        s3.run(v)


def test_cross_task_transfers_are_in_step_stats(cluster):
    with tf.device("/job:ps/task:0"):
        w = tf.constant(np.ones((4, 4), np.float32), name="w")
    with tf.device("/job:worker/task:1"):
        y = tf.reduce_sum(w * 2.0)
    md = tf.RunMetadata()
    out = tf.Session(cluster["worker", 0].target).run(
        y, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    assert out == 32.0
    [t] = [t for t in md.step_stats.transfers if t.tensor_name == "w:0"]
    assert t.src_device.startswith("/job:ps/replica:0/task:0") and t.bytes == 64
    assert t.dst_device.startswith("/job:worker/replica:0/task:1")
    devices = {d.device for d in md.step_stats.dev_stats}
    assert "/job:worker/replica:0/task:1/device:CPU:0" in devices


def test_feeds_cross_tasks(cluster):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.device("/job:worker/task:1"):
        y = tf.reduce_sum(x, axis=1)
    with tf.device("/job:ps/task:0"):
        z = y * 10.0
    sess = tf.Session(cluster["worker", 0].target)
    assert sess.run(z, {x: [[1, 2], [3, 4]]}).tolist() == [30.0, 70.0]
    assert sess.run([z, x], {x: [[1, 1]]})[1].tolist() == [[1.0, 1.0]]


def test_control_dependencies_cross_tasks(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="v")
        bump = tf.assign_add(v, 1.0)
    with tf.device("/job:worker/task:1"):
        with tf.control_dependencies([bump]):
            done = tf.no_op(name="done")
    sess = tf.Session(cluster["worker", 0].target)
    sess.run(v.initializer)
    sess.run(done)
    sess.run(done)
    assert sess.run(v) == 2.0


def test_graph_growth_is_sent_to_the_master(cluster):
    sess = tf.Session(cluster["worker", 0].target)
    a = tf.constant(2.0)
    assert sess.run(a) == 2.0
    b = a * 3.0
    assert sess.run(b) == 6.0


def test_device_filters_limit_the_tasks(cluster):
    with tf.device("/job:worker/task:1"):
        c = tf.constant(1.0) + 1.0
    cfg = tf.ConfigProto(device_filters=["/job:worker/task:0"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="explicitly assigned to /job:worker/task:1"):
        tf.Session(cluster["worker", 0].target, config=cfg).run(c)
    sess = tf.Session(cluster["worker", 0].target, config=cfg)
    assert [d.name for d in sess.list_devices()] == ["/job:worker/replica:0/task:0/device:CPU:0"]


def test_a_stopped_task_fails_the_step_with_unavailable_naming_it(cluster):
    with tf.device("/job:worker/task:1"):
        c = tf.constant(1.0) + 1.0
    sess = tf.Session(cluster["worker", 0].target)
    assert sess.run(c) == 2.0
    cluster["worker", 1].stop()
    with pytest.raises(tf.errors.UnavailableError, match="task:1"):
        sess.run(c)
    with tf.device("/job:ps/task:0"):
        d = tf.constant(3.0) * 1.0
    assert sess.run(d) == 3.0      # the surviving tasks keep working


def test_unknown_job_in_cluster_session(cluster):
    with tf.device("/job:nope"):
        c = tf.constant(1.0) + 1.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="Hint:"):
        tf.Session(cluster["worker", 0].target).run(c)


def test_a_transfer_into_a_sink_on_the_masters_task_comes_back_with_run_graph(cluster):
    """Nothing consumes reduce_sum(v) on the master's task: v comes back in the ps's
    RunGraph answer, and still shows as a transfer."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.ones([1 << 18]), name="big")
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(v)
    sess = tf.Session(cluster["worker", 0].target)
    sess.run(v.initializer)
    md = tf.RunMetadata()
    assert sess.run(total, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                    run_metadata=md) == float(1 << 18)
    [t] = [t for t in md.step_stats.transfers if t.tensor_name == "big/read:0"]
    assert t.bytes == 1 << 20 and t.dst_device.startswith("/job:worker/replica:0/task:0")


def test_only_transfers_into_sinks_of_the_masters_part_skip_recv_tensor():
    from tfteach.distributed.master.partition import Partitioner
    from tfteach.distributed.contract.session_targets import RemoteDevice

    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.constant(1.0, name="a")
            b = tf.constant(2.0, name="b")
        with tf.device("/job:worker/task:0"):
            sink = tf.identity(a, name="sink")          # consumed by nothing
            used = tf.identity(b, name="used") * 3.0    # consumed by mul
    tasks = {"/job:ps/replica:0/task:0": "h:1", "/job:worker/replica:0/task:0": "h:2"}
    devices = {task: RemoteDevice({"name": f"{task}/device:CPU:0"}) for task in tasks}
    placement = {op.name: devices["/job:ps/replica:0/task:0" if op.name in ("a", "b") else
                                  "/job:worker/replica:0/task:0"] for op in g.get_operations()}
    parts = Partitioner(placement, tasks).run(g.get_operations(), set(), [sink, used],
                                              master="/job:worker/replica:0/task:0")
    recvs = {n.attr["tensor"]: n.attr for n in parts["/job:worker/replica:0/task:0"].nodes
             if n.op == "_Recv"}
    sends = {n.input[0]: n.attr for n in parts["/job:ps/replica:0/task:0"].nodes
             if n.op == "_Send"}
    assert recvs["a:0"].get("via_master") and sends["a:0"].get("to_master")
    assert not recvs["b:0"].get("via_master") and not sends["b:0"].get("to_master")


def test_a_server_in_this_process_restores_the_switch_interval_when_it_stops():
    """The engine's short GIL switch interval holds while it serves, not for good."""
    import sys

    from tfteach.distributed.engine import graph_engine
    from tfteach.distributed.service.grpc_server import Server

    before = sys.getswitchinterval()
    first = Server({"local": ["localhost:0"]}, job_name="local", task_index=0)
    second = Server({"other": ["localhost:0"]}, job_name="other", task_index=0)
    assert sys.getswitchinterval() == pytest.approx(graph_engine.SWITCH_INTERVAL_S)
    first.stop()
    assert sys.getswitchinterval() == pytest.approx(graph_engine.SWITCH_INTERVAL_S)
    second.stop()
    assert sys.getswitchinterval() == pytest.approx(before)
