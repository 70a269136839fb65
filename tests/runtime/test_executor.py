"""The executor: overlap across devices, stragglers, step stats, cancellation, waiting kernels."""
import json
import threading
import time

import numpy as np
import pytest

import tfteach as tf
from tfteach import config
from tfteach.framework.registry import register_op
from tfteach.runtime.executor import Pending

LOCAL = "/job:localhost/replica:0/task:0/device:"


def traced(sess, fetch, feed=None):
    md = tf.RunMetadata()
    out = sess.run(fetch, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                   run_metadata=md)
    return out, md


def spans(md, device):
    for d in md.step_stats.dev_stats:
        if d.device == LOCAL + device:
            return [(n.all_start_micros, n.all_start_micros + n.all_end_rel_micros, n.op)
                    for n in d.node_stats]
    return []


def _register(name, kernel, **facts):
    from tfteach.framework import registry
    if name not in registry.registered_types():
        register_op(name, lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], kernel, **facts)


def test_two_devices_really_run_at_the_same_time():
    """GPU:0's kernel waits for an event that only GPU:1's kernel sets: without real
    overlap between device threads this step could never finish."""
    met = threading.Event()

    def wait_for_peer(ctx, x):
        if not met.wait(10):
            raise RuntimeError("the other device never ran while this one was busy")
        return x

    def signal_peer(ctx, x):
        met.set()
        return x

    _register("_TestWaitPeer", wait_for_peer)
    _register("_TestSignalPeer", signal_peer)
    g = tf.get_default_graph()
    with tf.device("/gpu:0"):
        a = g.create_op("_TestWaitPeer", [tf.constant(1.0)], {"T": tf.float32}).outputs[0]
    with tf.device("/gpu:1"):
        b = g.create_op("_TestSignalPeer", [tf.constant(2.0)], {"T": tf.float32}).outputs[0]
    with tf.device("/cpu:0"):
        total = a + b
    assert tf.Session().run(total, options=tf.RunOptions(timeout_in_ms=20000)) == 3.0


def test_step_stats_record_ops_devices_bytes_and_transfers():
    with tf.device("/gpu:0"):
        a = tf.constant(np.ones((2, 3), np.float32), name="a")
        b = tf.matmul(a, a, transpose_b=True, name="b")
    with tf.device("/cpu:0"):
        c = tf.identity(b, name="c")
    out, md = traced(tf.Session(), c)
    ops = {n.node_name: (d.device, n.output_bytes) for d in md.step_stats.dev_stats
           for n in d.node_stats}
    assert ops["b"] == (LOCAL + "GPU:0", 16) and ops["c"] == (LOCAL + "CPU:0", 16)
    [t] = md.step_stats.transfers
    assert (t.tensor_name, t.src_device, t.dst_device, t.bytes) == (
        "b:0", LOCAL + "GPU:0", LOCAL + "CPU:0", 16)


def test_chrome_trace_has_processes_ops_and_flows():
    with tf.device("/gpu:1"):
        b = tf.constant(1.0) * 2.0
    with tf.device("/cpu:0"):
        c = b + 1.0
    _, md = traced(tf.Session(), c)
    trace = json.loads(tf.timeline.Timeline(md.step_stats).generate_chrome_trace_format())
    ev = trace["traceEvents"]
    procs = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert {LOCAL + "CPU:0", LOCAL + "GPU:1"} <= procs
    xs = [e for e in ev if e["ph"] == "X" and e["cat"] == "Op"]
    assert {e["args"]["op"] for e in xs} >= {"Mul", "Add", "Const"}
    assert all("name" in e["args"] for e in xs)
    assert [e["ph"] for e in ev if e.get("cat") == "DataFlow"] == ["s", "t", "s", "t"]


def test_timeline_data_is_relative_and_complete():
    with tf.device("/gpu:0"):
        b = tf.constant(1.0) * 2.0
    with tf.device("/cpu:0"):
        c = b + 1.0
    _, md = traced(tf.Session(), c)
    data = tf.timeline.Timeline(md.step_stats).to_data()
    assert [d["short"] for d in data["devices"]] == ["CPU:0", "GPU:0"]
    assert min(o["start_us"] for o in data["ops"] + data["transfers"]) == 0
    assert data["step_us"] == max(o["end_us"] for o in data["ops"] + data["transfers"])
    assert data["transfers"][0]["tensor"] == "mul:0"


def test_slow_virtual_gpu_stretches_each_kernel_by_its_speed():
    config.set_virtual_gpus(2, speeds=[1.0, 0.25])
    with tf.device("/gpu:1"):
        m = tf.random_normal([300, 300], seed=2)
        for _ in range(3):
            m = tf.matmul(m, m) * 1e-3
    sess = tf.Session()
    _, md = traced(sess, m)
    [dev] = [d for d in md.step_stats.dev_stats if d.device == LOCAL + "GPU:1"]
    matmuls = [n for n in dev.node_stats if n.op == "MatMul"]
    assert len(matmuls) == 3
    for n in matmuls:   # wall time = kernel time / speed (sleep never ends early)
        assert n.all_end_rel_micros >= 4 * n.op_end_rel_micros - 4


def test_waiting_kernel_does_not_block_its_device_thread():
    gate = threading.Event()

    def wait_kernel(ctx, x):
        p = Pending()
        threading.Thread(target=lambda: (gate.wait(5), p.resolve(x + 1)), daemon=True).start()
        return p

    _register("_TestWait", wait_kernel, is_async=True)
    g = tf.get_default_graph()
    with tf.device("/cpu:0"):
        x = tf.constant(1.0)
        waited = g.create_op("_TestWait", [x], {"T": tf.float32}).outputs[0]
        other = x * 10.0
    sess = tf.Session()
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("v", sess.run([waited, other])))
    t.start()
    time.sleep(0.3)
    assert "v" not in result            # still waiting...
    gate.set()                          # ...and the same device thread was free all along
    t.join(5)
    assert result["v"] == [2.0, 10.0]


def test_step_timeout_is_deadline_exceeded():
    def never(ctx, x):
        return Pending()
    _register("_TestNever", never, is_async=True)
    g = tf.get_default_graph()
    y = g.create_op("_TestNever", [tf.constant(1.0)], {"T": tf.float32}).outputs[0]
    with pytest.raises(tf.errors.DeadlineExceededError, match="Hint:"):
        tf.Session().run(y, options=tf.RunOptions(timeout_in_ms=200))


def test_ctrl_c_cancels_the_step_and_leaves_the_session_usable():
    import _thread

    def slow(ctx, x):
        p = Pending()
        threading.Timer(0.2, lambda: _thread.interrupt_main()).start()
        return p
    _register("_TestSlow", slow, is_async=True)
    g = tf.get_default_graph()
    c = tf.constant(1.0)
    y = g.create_op("_TestSlow", [c], {"T": tf.float32}).outputs[0]
    sess = tf.Session()
    with pytest.raises(KeyboardInterrupt):
        sess.run(y)
    assert sess.run(c + 1.0) == 2.0


def test_chain_of_same_device_ops_runs_on_one_thread():
    x = tf.placeholder(tf.float32, [])
    y = x
    for _ in range(50):
        y = y + 1.0
    _, md = traced(tf.Session(), y, {x: 0.0})
    threads = {n.thread_id for d in md.step_stats.dev_stats for n in d.node_stats}
    assert len(threads) == 1 and threads == {threading.get_ident()}


def test_ctrl_c_in_a_synchronous_step_returns_the_memory():
    import _thread

    def interrupt(ctx, x):
        _thread.interrupt_main()
        time.sleep(1)            # the KeyboardInterrupt arrives here, inside the step
        return x

    _register("_TestInterrupt", interrupt)
    g = tf.get_default_graph()
    with tf.device("/gpu:0"):
        big = tf.fill([512, 512], 1.0)
        y = g.create_op("_TestInterrupt", [big * 2.0], {"T": tf.float32}).outputs[0]
    sess = tf.Session()
    dev = [d for d in sess.devices if d.name == LOCAL + "GPU:0"][0]
    before = dev.memory.used
    with pytest.raises(KeyboardInterrupt):
        sess.run(y)
    assert dev.memory.used == before
    assert sess.run(big)[0, 0] == 1.0
