"""Phased steps between tasks other than the master: a tensor from one such task to another
travels inside RunGraph answers and requests through the master (no RecvTensor), unless it
is large, when its receiver pulls it in a later phase into a reused segment of its own; a
session whose model runs wholly on other tasks is phased too. Partitions are checked
directly; steps on in-process servers over loopback are checked for values and for the
RecvTensor calls they make."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.distributed.master import phases
from tfteach.distributed.transport import shm
from tfteach.distributed.transport import wire
from tfteach.distributed.engine.graph_engine import GraphEngine
from tfteach.distributed.contract.session_targets import RemoteDevice
from tfteach.distributed.master.partition import Partitioner
from tfteach.distributed.master.phases import split_phases
from tfteach.runtime.plan import needed_ops

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

PS, W0, W1 = ("/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0",
              "/job:worker/replica:0/task:1")
TASKS = {"/job:ps/task:0": PS, "/job:worker/task:0": W0, "/job:worker/task:1": W1}


def _split(fetches, targets=(), fed=(), master=W0, apart=frozenset()):
    g = tf.get_default_graph()
    devices = {task: RemoteDevice({"name": f"{task}/device:CPU:0"}) for task in TASKS.values()}
    placement = {op.name: devices[TASKS[op.device]] for op in g.get_operations()}
    need = needed_ops([t.op for t in fetches] + list(targets), set(fed))
    ops = [op for op in g.get_operations() if op._id in need]
    partitioner = Partitioner(placement, {t: "h:1" for t in TASKS.values()}, bypass_noops=True)
    parts = partitioner.run(ops, set(fed), fetches, master=master)
    return split_phases(parts, master, partitioner.tensors, apart)


def _softmax(towers, ps="/job:ps/task:0", batch=4):
    """Softmax regression 6x3, variables on ``ps``, one tower per device in ``towers``
    (gradients averaged on the first); returns (train op, loss, feeds, W)."""
    with tf.device(ps):
        w = tf.Variable(tf.zeros([6, 3]), name="W")
        b = tf.Variable(tf.zeros([3]), name="b")
    opt = tf.train.GradientDescentOptimizer(0.5)
    rng = np.random.default_rng(0)
    feeds, losses, grads = {}, [], []
    for dev in towers:
        with tf.device(dev):
            x = tf.placeholder(tf.float32, [None, 6])
            y = tf.placeholder(tf.float32, [None, 3])
            losses.append(tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
                labels=y, logits=tf.matmul(x, w) + b)))
            grads.append(opt.compute_gradients(losses[-1], [w, b]))
        feeds[x] = rng.random((batch, 6), dtype=np.float32)
        feeds[y] = np.eye(3, dtype=np.float32)[rng.integers(0, 3, batch)]
    with tf.device(towers[0]):
        mean = [tf.add_n([g[i][0] for g in grads]) / len(towers) for i in range(2)]
        loss = tf.add_n(losses) / len(towers)
    return opt.apply_gradients(zip(mean, [w, b], strict=True)), loss, feeds, w


def _count_recv_tensor(monkeypatch):
    calls = []
    real = GraphEngine.recv_tensor

    def counting(self, step_id, key, timeout):
        calls.append(key)
        return real(self, step_id, key, timeout)
    monkeypatch.setattr(GraphEngine, "recv_tensor", counting)
    return calls


def _train(target, towers, steps=4):
    """Losses of ``steps`` training steps and the final W, in a fresh graph."""
    with tf.Graph().as_default():
        devices = towers if target else [""] * len(towers)
        train, loss, feeds, w = _softmax(devices, ps="/job:ps/task:0" if target else "")
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss], feeds)[1] for _ in range(steps)]
            return losses, sess.run(w)


def test_a_small_tensor_between_two_other_tasks_goes_through_the_master():
    with tf.device("/job:ps/task:0"):
        a = tf.constant(2.0, name="a") * 3.0
    with tf.device("/job:worker/task:1"):
        b = a + 1.0
    with tf.device("/job:worker/task:0"):
        c = b * 2.0
    split = _split([c])
    assert not any(n.op == "_Recv" for p in split for n in p.nodes)
    [send] = [n for p in split for n in p.nodes if n.op == "_Send" and n.input == [a.name]]
    assert send.attr.get("to_master")
    [sender] = [p for p in split if send in p.nodes]
    [receiver] = [p for p in split if send.key in p.inputs.values()]
    assert (sender.task, receiver.task) == (PS, W1) and receiver.phase == sender.phase + 1


def test_a_large_tensor_between_two_other_tasks_is_pulled_in_the_senders_phase():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([phases.DIRECT_BYTES // 4]), name="big")
    with tf.device("/job:worker/task:1"):
        s = tf.reduce_sum(v)
    split = _split([s])
    [recv] = [n for p in split for n in p.nodes if n.op == "_Recv"]
    [send] = [n for p in split for n in p.nodes if n.op == "_Send"]
    assert recv.key == send.key and not send.attr.get("to_master")
    [sender] = [p for p in split if send in p.nodes]
    [receiver] = [p for p in split if recv in p.nodes]
    assert (sender.task, receiver.task) == (PS, W1) and receiver.phase == sender.phase
    order = [id(p) for p in split]      # the puller's call leaves first, then the sender's
    assert order.index(id(receiver)) < order.index(id(sender))


@pytest.mark.parametrize("apart", [frozenset(), frozenset({PS})], ids=["one host", "apart"])
def test_a_1_mib_tensor_between_other_tasks_is_pulled_only_from_another_host(apart):
    """Through the master it would cross the network twice; on one host, the master's
    shared-memory copies cost less than the receiver's extra call."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.zeros([(1 << 20) // 4]), name="mid")
    with tf.device("/job:worker/task:1"):
        s = tf.reduce_sum(v)
    split = _split([s], apart=apart)
    pulled = [n for p in split for n in p.nodes if n.op == "_Recv"]
    assert len(pulled) == (1 if apart else 0)
    if apart:       # worker 1's call goes out with the ps's, not after its answer
        assert {(p.task, p.phase) for p in split if p.task != W0} == {(PS, 0), (W1, 0)}


def test_a_step_with_no_op_on_the_master_is_cut_into_phases():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:1"):
        doubled = v * 2.0
    with tf.device("/job:ps/task:0"):
        out = tf.assign(v, doubled)
    split = _split([out])
    assert split is not None and {p.task for p in split} == {PS, W1}
    assert [p.phase for p in split if p.task == PS] == [0, 2]
    assert [p.phase for p in split if p.task == W1] == [1]


def test_a_send_between_other_tasks_answers_in_the_phase_before_its_receivers():
    """The learning rate of a model on worker 1 (variables on the ps) is sent with the
    gradients, for the ps's apply phase, so worker 1 runs one phase, not a phase 0 of its
    own for the constant's send."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:1"):
        rate = tf.constant(0.5, name="rate")
        grad = v * 2.0
    with tf.device("/job:ps/task:0"):
        apply = tf.assign_sub(v, rate * grad)
    split = _split([apply])
    assert [p.phase for p in split if p.task == W1] == [1]
    assert [p.phase for p in split if p.task == PS] == [0, 2]


def test_the_masters_tower_computes_its_gradients_while_the_other_tower_runs():
    """In-graph towers on workers 0 (the master) and 1: the master's whole tower, its
    backward pass included, runs in the phase whose call to worker 1 is in flight; the phase
    after worker 1 answers only averages, and the master runs no phase more than before."""
    with tf.device("/job:worker/task:0"):       # the optimizer's own ops: the master's
        train, loss, fed, _ = _softmax(["/job:worker/task:0", "/job:worker/task:1"])
    masters = [p for p in _split([loss], [train], list(fed)) if p.task == W0]
    assert [p.phase for p in masters] == [1, 2]
    later = {n.op for n in masters[1].nodes}
    assert "MatMul" in {n.op for n in masters[0].nodes} and "MatMul" not in later
    assert later <= {"Placeholder", "Const", "Identity", "AddN", "RealDiv", "_Send"}


def test_compute_on_another_worker_makes_no_recv_tensor_calls_and_matches_a_local_session(
        engine_cluster, monkeypatch):
    calls = _count_recv_tensor(monkeypatch)
    remote = _train(engine_cluster["worker", 0].target, ["/job:worker/task:1"])
    assert calls == []
    local = _train("", ["/job:worker/task:1"])
    np.testing.assert_allclose(remote[0], local[0], rtol=1e-5)
    np.testing.assert_allclose(remote[1], local[1], rtol=1e-5)


def test_in_graph_towers_on_two_workers_make_no_recv_tensor_calls_and_match_a_local_session(
        engine_cluster, monkeypatch):
    towers = ["/job:worker/task:0", "/job:worker/task:1"]
    calls = _count_recv_tensor(monkeypatch)
    remote = _train(engine_cluster["worker", 0].target, towers)
    assert calls == []
    local = _train("", towers)
    np.testing.assert_allclose(remote[0], local[0], rtol=1e-5)
    np.testing.assert_allclose(remote[1], local[1], rtol=1e-5)


def test_a_large_tensor_between_two_other_tasks_arrives_in_the_receivers_segment(
        engine_cluster, monkeypatch):
    n = phases.DIRECT_BYTES // 4
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.range(n, dtype=tf.float32), name="big")
    with tf.device("/job:worker/task:1"):
        s = tf.reduce_max(v) + tf.reduce_min(v)
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(v.initializer)
    written, own = [], []
    real_fill, real_export = wire.fill_into, shm.export
    monkeypatch.setattr(wire, "fill_into", lambda *a: written.append(a[3]) or real_fill(*a))
    monkeypatch.setattr(shm, "export",
                        lambda data: own.append(memoryview(data).nbytes) or real_export(data))
    assert [sess.run(s) for _ in range(2)] == [n - 1.0] * 2
    # No segment of the sender's own for the tensor (a first call may export the small
    # segment that proves the task shares this host).
    assert len(written) == 2 and [b for b in own if b >= 4 * n] == []


def test_a_traced_step_on_another_worker_shows_its_transfers(engine_cluster):
    train, loss, feeds, _ = _softmax(["/job:worker/task:1"])
    sess = tf.Session(engine_cluster["worker", 0].target)
    sess.run(tf.global_variables_initializer())
    md = tf.RunMetadata()
    sess.run(train, feeds, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=md)
    moved = {(t.tensor_name, t.src_device.split("/device:")[0], t.dst_device.split("/device:")[0])
             for t in md.step_stats.transfers}
    assert {("W/read:0", PS, W1), ("b/read:0", PS, W1)} <= moved
