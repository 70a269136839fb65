"""Phased steps: transfers between the master's part and other tasks travel inside RunGraph
calls (no RecvTensor), the other parts cut into phases; steps that cannot be cut, and traced
steps, keep RecvTensor. Partitions are checked directly, and steps on real in-process
servers over loopback are checked for values and for the RecvTensor calls they make."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.distributed.engine.graph_engine import GraphEngine
from tfteach.distributed.master.partition import Partitioner
from tfteach.distributed.master.phases import split_phases
from tfteach.distributed.contract.session_targets import RemoteDevice
from tfteach.runtime.plan import needed_ops

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

PS, W0, W1 = ("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0",
              "/job:worker/replica:0/task:1")


def _softmax_regression(global_step=False, ps="/job:ps/task:0", worker="/job:worker/task:0"):
    with tf.device(ps):
        w = tf.Variable(tf.zeros([6, 3]), name="W")
        b = tf.Variable(tf.zeros([3]), name="b")
        step = tf.train.get_or_create_global_step() if global_step else None
    with tf.device(worker):
        x = tf.placeholder(tf.float32, [None, 6], name="x")
        y = tf.placeholder(tf.float32, [None, 3], name="y")
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
            labels=y, logits=tf.matmul(x, w) + b))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    return (w, b), (x, y), loss, train


def _split(fetches, targets, fed, master=W0):
    g = tf.get_default_graph()
    tasks = {PS: "h:1", W0: "h:2", W1: "h:3"}
    devices = {task: RemoteDevice({"name": f"{task}/device:CPU:0"}) for task in tasks}
    placement = {op.name: devices[_task_of(op.device)] for op in g.get_operations()}
    need = needed_ops([t.op for t in fetches] + targets, set(fed))
    ops = [op for op in g.get_operations() if op._id in need]
    partitioner = Partitioner(placement, tasks, bypass_noops=True)     # as the master does
    parts = partitioner.run(ops, set(fed), fetches, master=master)
    return parts, split_phases(parts, master, partitioner.tensors)


def _task_of(device):
    if "/job:ps" in device:
        return PS
    return W1 if "/job:worker/task:1" in device else W0


def _ops(part):
    return {n.name: n.op for n in part.nodes}


def test_a_training_step_cuts_the_ps_part_into_read_and_apply_phases():
    _, fed, loss, train = _softmax_regression(global_step=True)
    parts, split = _split([loss], [train], fed)
    masters = [p for p in split if p.task == W0]
    ps_phases = [p for p in split if p.task == PS]
    assert split == masters + ps_phases and len(ps_phases) >= 2
    for phases in (masters, ps_phases):
        assert [p.phase for p in phases] == sorted({p.phase for p in phases})
        assert [p.first for p in phases] == [True] + [False] * (len(phases) - 1)
        assert not any(n.op == "_Recv" for p in phases for n in p.nodes)
    # the ps reads, the master computes (its learning rate is made when it is sent: no
    # phase of its own before the read), the ps applies and counts the step: the global
    # step's increment waits on the updates within the ps, and no control edge crosses
    assert [p.phase for p in ps_phases] == [0, 1] and [p.phase for p in masters] == [1]
    assert not any(n.name.startswith(("_ctl/", "_recv/_ctl/", "_send/_ctl/"))
                   for p in split for n in p.nodes)
    # (as in TF, the wait is on the increment's value, built inside the control block)
    nodes = {n.name: n for n in ps_phases[1].nodes}
    bump = next(n for n in ps_phases[1].nodes if n.op == "AssignAdd")
    waits = set(bump.input) | {i for name in bump.input
                                  for i in nodes[name.lstrip("^").split(":")[0]].input}
    assert {"^GradientDescent/update_W/ApplyGradientDescent",
            "^GradientDescent/update_b/ApplyGradientDescent"} <= waits
    read, apply = ps_phases[0], ps_phases[1]
    # phase 0 reads the variables and answers them to the master; it needs nothing
    assert read.inputs == {}
    sends = [n for n in read.nodes if n.op == "_Send"]
    assert {n.input[0] for n in sends} == {"W/read:0", "b/read:0"}
    assert all(n.attr["to_master"] for n in sends)
    # phase 1 gets the gradients (and learning rate) in its request, copies the variables
    assert {"W", "b"} <= set(_ops(apply)) and "ApplyGradientDescent" in _ops(apply).values()
    grads = {key.split(";")[3] for key in apply.inputs.values()}
    assert {"gradients/MatMul_grad/MatMul_1:0", "GradientDescent/learning_rate:0"} <= grads
    for placeholder in apply.inputs:
        assert _ops(apply)[placeholder.rsplit(":", 1)[0]] == "Placeholder"
    # the master computes the loss and gradients in the phase fed the variables' values
    [model] = [p for p in masters if "MatMul" in _ops(p)]
    assert {key.split(";")[3] for key in model.inputs.values()} == {"W/read:0", "b/read:0"}
    assert model.fetches == [loss.name] and set(model.feeds.values()) == {"x:0", "y:0"}
    assert not any(n.attr.get("to_master") for p in masters for n in p.nodes)
    # the parts the unphased path would register are left as they were
    assert not any(n.attr.get("to_master") for n in parts[PS].nodes
                   if n.op == "_Send" and n.input[0] in ("W/read:0", "b/read:0"))


def test_copying_a_source_op_into_phases_follows_its_op_defs_copyable_flag(monkeypatch):
    """The variables are copied into the ps's apply phase because VariableV2's OpDef says
    ``copyable``; without it their storage (a reference) would cross phases, and the step
    keeps RecvTensor."""
    from tfteach.framework import registry

    _, fed, loss, train = _softmax_regression()
    _, split = _split([loss], [train], fed)
    assert split is not None
    monkeypatch.setattr(registry.get("VariableV2"), "copyable", False)
    assert _split([loss], [train], fed)[1] is None


def test_the_master_carries_a_value_into_its_later_phase():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, name="x")
        a = tf.multiply(x, 2.0, name="a")               # needs nothing from the ps
        c = tf.add(a, v, name="c")                       # needs v: phase 1
    with tf.device("/job:ps/task:0"):
        d = tf.multiply(c, v, name="d")                  # the ps's phase 1
    with tf.device("/job:worker/task:0"):
        e = tf.subtract(d, a, name="e")                  # needs d: phase 2, and a again
    _, split = _split([e], [], {x})
    first, later = [p for p in split if p.task == W0]
    assert {"a", "c"} <= set(_ops(first)) and "e" in _ops(later)   # a: as late as it can
    assert first.carry_out == ["a:0"] and later.carried == {"_carry/a_0:0": "a:0"}
    assert "_carry/a_0:0" in next(n for n in later.nodes if n.name == "e").input


def test_a_control_edge_between_tasks_is_kept_by_the_order_of_the_phases():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="v")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, name="x")
        ready = tf.multiply(x, 2.0, name="ready")
    with tf.device("/job:ps/task:0"):
        with tf.control_dependencies([ready]):
            bump = tf.assign_add(v, 1.0, name="bump")
    _, split = _split([ready], [bump.op], {x})
    [master] = [p for p in split if p.task == W0]
    [ps] = [p for p in split if p.task == PS]
    assert "ready" in _ops(master) and "bump" in _ops(ps)
    assert master.phase <= ps.phase          # stage k runs the master's phase k first
    bump_node = next(n for n in ps.nodes if n.name == "bump")
    assert ps.inputs == {} and not any(e.startswith("^") for e in bump_node.input)
    assert not any(n.name.startswith("_ctl/") for p in split for n in p.nodes)


def test_control_edges_between_tasks_hold_in_real_steps(engine_cluster):
    """The ps's increment runs after the worker's op it waits on, step after step: the
    worker's op appends to a queue on the ps that the increment reads the size of."""
    from tfteach.ops.data_flow_ops import FIFOQueue

    with tf.device("/job:ps/task:0"):
        q = FIFOQueue(100, tf.float32, shapes=(), name="order_q", shared_name="order_q")
        seen = tf.Variable(0, name="seen")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, name="x")
        put = q.enqueue(x * 2.0)
        with tf.control_dependencies([put]):
            done = tf.no_op(name="done")
    with tf.device("/job:ps/task:0"):
        with tf.control_dependencies([done]):
            record = tf.assign(seen, q.size())
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(seen.initializer)
    assert [sess.run(record, {x: float(i)}) for i in range(3)] == [1, 2, 3]


def test_a_value_a_later_phase_of_the_ps_uses_waits_in_its_rendezvous():
    """``twice`` is computed in the ps's phase 0 (sent to the master) and used again in
    its phase 1: it is sent within the ps, not read twice."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
        twice = tf.multiply(v, 2.0, name="twice")
    with tf.device("/job:worker/task:0"):
        back = twice + 1.0
    with tf.device("/job:ps/task:0"):
        out = tf.assign(v, back * twice)
    _, split = _split([out], [], set())
    read, apply = [p for p in split if p.task == PS]
    [send] = [n for n in read.nodes if n.name.startswith("_carry_send/")]
    [recv] = [n for n in apply.nodes if n.name.startswith("_carry/")]
    assert send.input == ["twice:0"] and not send.attr.get("to_master")
    assert recv.op == "_Recv" and recv.attr["key"] == send.attr["key"]
    assert recv.attr["src_task"] == PS and "twice" not in _ops(apply)
    assert "_carry_send/twice_0" in read.targets()


def test_a_reference_used_across_phases_keeps_recv_tensor():
    """Assign's output is the variable's storage, not a value: it cannot be carried."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
        set_v = tf.assign(v, 2.0)
    with tf.device("/job:worker/task:0"):
        c = tf.identity(v) + 1.0
    with tf.device("/job:ps/task:0"):
        out = set_v * c
    _, split = _split([out], [], set())
    assert split is None


def _count_recv_tensor(monkeypatch):
    calls = []
    real = GraphEngine.recv_tensor

    def counting(self, step_id, key, timeout):
        calls.append(key)
        return real(self, step_id, key, timeout)
    monkeypatch.setattr(GraphEngine, "recv_tensor", counting)
    return calls


def test_training_steps_make_no_recv_tensor_calls_and_match_a_local_session(
        engine_cluster, monkeypatch):
    rng = np.random.default_rng(0)
    xs = rng.random((8, 6), dtype=np.float32)
    ys = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    results = {}
    for target in ("", engine_cluster["worker", 0].target):
        devices = {} if target else {"ps": None, "worker": None}
        with tf.Graph().as_default():
            (w, b), (x, y), loss, train = _softmax_regression(True, **devices)
            step = tf.train.get_global_step()
            with tf.Session(target) as sess:
                sess.run(tf.global_variables_initializer())
                calls = _count_recv_tensor(monkeypatch)
                losses = [sess.run([train, loss], {x: xs, y: ys})[1] for _ in range(5)]
                results[target] = (losses, sess.run(w), sess.run(step), list(calls))
    local, remote = results.values()
    np.testing.assert_allclose(remote[0], local[0], rtol=1e-5)
    np.testing.assert_allclose(remote[1], local[1], rtol=1e-5)
    assert remote[2] == local[2] == 5
    assert remote[3] == []          # every transfer went in RunGraph requests and answers


def test_a_traced_step_keeps_recv_tensor_and_shows_its_transfers(engine_cluster, monkeypatch):
    (w, b), (x, y), loss, train = _softmax_regression()
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(tf.global_variables_initializer())
    feed = {x: np.ones((2, 6), np.float32), y: np.eye(3, dtype=np.float32)[:2]}
    calls = _count_recv_tensor(monkeypatch)
    md = tf.RunMetadata()
    sess.run(train, feed, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=md)
    assert any("W/read:0" in key for key in calls)
    assert {"W/read:0", "b/read:0"} <= {t.tensor_name for t in md.step_stats.transfers}
    calls.clear()
    sess.run(train, feed)
    assert calls == []


def test_a_task_counts_one_step_for_all_its_phases(engine_cluster):
    from tfteach.distributed.client.client import ClusterClient

    _, (x, y), _, train = _softmax_regression()
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(tf.global_variables_initializer())
    ps = ClusterClient().worker(engine_cluster["ps", 0].target, PS)
    before = ps.get_status()["last_step"]
    for _ in range(3):
        sess.run(train, {x: np.ones((2, 6), np.float32), y: np.eye(3, dtype=np.float32)[:2]})
    assert ps.get_status()["last_step"] == before + 3


def test_values_carried_between_phases(engine_cluster, monkeypatch):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0, name="v")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, name="x")
        a = x * 2.0
        c = a + v
    with tf.device("/job:ps/task:0"):
        d = c * v
    with tf.device("/job:worker/task:0"):
        e = d - a
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(v.initializer)
    calls = _count_recv_tensor(monkeypatch)
    assert sess.run([a, c, d, e], {x: 5.0}) == [10.0, 13.0, 39.0, 29.0]
    assert calls == []          # v's value waited in the ps's rendezvous for its phase 1


def test_a_failing_phase_fails_the_step_and_the_session_goes_on(engine_cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable([1.0, 2.0], name="v")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, name="x")
        scaled = v * x
    with tf.device("/job:ps/task:0"):
        update = tf.assign(v, scaled)           # validate_shape: a wrong shape fails phase 1
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(v.initializer)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Assign requires shapes"):
        sess.run(update, {x: [[1.0, 1.0], [1.0, 1.0]]})
    assert sess.run(update, {x: 3.0}).tolist() == [3.0, 6.0]


def test_large_answers_reuse_one_reply_segment_step_after_step(engine_cluster, monkeypatch):
    """A 1 MiB variable read on the master's task every step: after the first step the ps
    writes it into the master's reply segment, and the master the fetched update into the
    client's, making no segment per step; every step sees the variable's current value."""
    from tfteach.distributed.transport import shm

    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([1 << 18]), name="big")
        bump = tf.assign_add(v, tf.ones([1 << 18]))
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(v)
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(v.initializer)
    assert sess.run(total) == 0.0                      # learns the answer's size
    assert sess.run(bump)[0] == 1.0                    # the same for the client's answer
    exports = []
    real_export = shm.export
    monkeypatch.setattr(shm, "export", lambda data: exports.append(1) or real_export(data))
    for step in range(2, 5):
        assert sess.run(bump)[-1] == float(step)
        assert sess.run(total) == float(step << 18)
    assert exports == []


def test_a_failing_part_aborts_a_waiting_part_of_the_same_stage_at_once(engine_cluster):
    """Stage 0 runs worker 1's part (a dequeue from an empty queue: it waits) and the ps's
    (reads a variable never initialized: it fails). The failure aborts the waiting part
    at once, whichever of them the calling thread runs; the step does not wait for the
    dequeue's 30 s timeout."""
    import time

    from tfteach.ops.data_flow_ops import FIFOQueue

    with tf.device("/job:worker/task:1"):
        q = FIFOQueue(10, tf.float32, shapes=(), name="stage_q", shared_name="stage_q")
        take = q.dequeue()
    with tf.device("/job:ps/task:0"):
        never = tf.Variable(1.0, name="never_initialized")
        bad = never * 2.0
    with tf.device("/job:worker/task:0"):
        both = take + bad
    sess = tf.Session(engine_cluster["worker", 0].target)
    t0 = time.monotonic()
    with pytest.raises(tf.errors.FailedPreconditionError, match="never_initialized"):
        sess.run(both, options=tf.RunOptions(timeout_in_ms=30000))
    assert time.monotonic() - t0 < 10


def test_large_feeds_and_sends_go_through_the_senders_segments(engine_cluster, monkeypatch):
    """A 256 KiB feed reaches the master in the client's segment, and the master sends it
    on to the ps in its own (the client knows the master's host from CreateSession, the
    master the ps's from GetStatus); small feeds stay inline; the values arrive whole.
    (The client reaches the master over gRPC, as from another process.)"""
    from tfteach.distributed.client import in_process_master as local_master
    from tfteach.distributed.transport import wire

    monkeypatch.setattr(local_master, "find", lambda address, token: None)
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([1 << 16]), name="v")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [1 << 16], name="x")
        k = tf.placeholder(tf.float32, [], name="k")
    update = tf.assign(v, x * 1.0)
    with tf.device("/job:ps/task:0"):
        total = tf.reduce_sum(update) * k
    sess = tf.Session(engine_cluster["worker", 0].target)
    copied = []
    real = wire.from_segment
    monkeypatch.setattr(wire, "from_segment", lambda proto, sender: copied.append(
        proto.header.nbytes) or real(proto, sender))
    for step in (1.0, 2.0):
        values = np.full(1 << 16, step, np.float32)
        assert sess.run(total, {x: values, k: 2.0}) == 2.0 * step * (1 << 16)
        np.testing.assert_array_equal(sess.run(v), values)
    assert copied == [1 << 18] * 4      # per step: the feed at the master, x * 1.0 at the ps


@pytest.mark.parametrize("use_lane", ["1", "0"], ids=["lane", "grpc"])
def test_steps_reuse_one_rungraph_stream_and_a_failure_closes_it(engine_cluster, monkeypatch,
                                                                 use_lane):
    """Every phase's RunGraph to the ps goes on one stream (on the task's lane, or with
    TFTEACH_LANE=0 on gRPC), opened once and reused step after step (RunStep makes no
    call: the master is a Server of this process). A failing phase ends its stream with
    the error (its class intact); the next step opens a new stream and succeeds."""
    from tfteach.distributed.client import route
    from tfteach.distributed.transport import lane

    monkeypatch.setenv(lane.LANE_ENV, use_lane)
    stream_class = lane.LaneStream if use_lane == "1" and lane.enabled() else route.CallStream
    calls = []
    real_call = stream_class.call
    monkeypatch.setattr(stream_class, "call", lambda self, request: calls.append(
        (self, type(request).__name__)) or real_call(self, request))

    def rungraph_streams():
        return list(dict.fromkeys(s for s, kind in calls if kind == "RunGraphRequest"))

    (w, b), (x, y), loss, train = _softmax_regression()
    with tf.device("/job:ps/task:0"):
        never = tf.Variable(1.0, name="never_initialized")
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(tf.global_variables_initializer().control_inputs[:2])
    feed = {x: np.ones((4, 6), np.float32), y: np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]}
    for _ in range(3):
        sess.run(train, feed)
    opened = rungraph_streams()
    assert len(opened) == 1 and [k for _, k in calls].count("RunGraphRequest") == 1 + 3 * 2
    assert "RunStepRequest" not in [kind for _, kind in calls]
    with pytest.raises(tf.errors.FailedPreconditionError, match="never_initialized"):
        sess.run(never + 1.0)
    assert not opened[0].open()
    assert sess.run(loss, feed) > 0 and len(rungraph_streams()) == 2
