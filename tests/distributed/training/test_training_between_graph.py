"""Between-graph replication on real in-process servers (gRPC on loopback): every worker has
its own graph and session; sync (SyncReplicasOptimizer) and async training."""
import logging
import re
import threading
import time

import pytest

import tfteach as tf
from tfteach.experiments import InProcessCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(40)]


@pytest.fixture
def cluster():
    with InProcessCluster(ps=1, workers=2) as c:
        yield c


@pytest.fixture
def cluster3():
    with InProcessCluster(ps=1, workers=3) as c:
        yield c


class Worker:
    """One worker's graph: loss = w * c (so its gradient is the fed c), on the ps."""

    def __init__(self, cluster, index, sync=False, replicas=2, total=None, num_tokens=-1):
        self.index, self.sync = index, sync
        self.graph = tf.Graph()
        with self.graph.as_default(), tf.device(tf.train.replica_device_setter(
                worker_device=f"/job:worker/task:{index}", cluster=cluster.spec)):
            self.w = tf.Variable(tf.zeros([], tf.float64), name="w")
            self.gs = tf.train.get_or_create_global_step()
            self.c = tf.placeholder(tf.float64, [], name="c")
            opt = tf.train.GradientDescentOptimizer(1.0)
            if sync:
                opt = tf.train.SyncReplicasOptimizer(opt, replicas, total_num_replicas=total)
            self.opt = opt
            self.train = opt.minimize(self.w * self.c, global_step=self.gs)
        self.hooks = [opt.make_session_run_hook(index == 0, num_tokens)] if sync else []
        self.target = cluster.target("worker", index)
        self.accepted = []

    def session(self, extra_hooks=()):
        with self.graph.as_default():
            config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{self.index}"])
            return tf.train.MonitoredTrainingSession(
                master=self.target, is_chief=self.index == 0, config=config,
                hooks=self.hooks + list(extra_hooks), stop_grace_period_secs=5)

    def step(self, sess, c):
        fetches = [self.train] + ([self.opt.gradients_accepted] if self.sync else [])
        out = sess.run(fetches, {self.c: c})
        if self.sync:
            self.accepted.append(bool(out[1][0]))
        return out

    def run_steps(self, sess, values):
        for c in values:
            self.step(sess, c)


def _threads(*targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not any(t.is_alive() for t in threads)


def _read(worker, *tensors):
    with tf.Session(worker.target, graph=worker.graph) as sess:
        return sess.run(list(tensors))


def _wait_for_step(worker, sess, step):
    for _ in range(200):
        if sess.run(worker.gs) >= step:
            return
        time.sleep(0.02)
    raise AssertionError(f"global step did not reach {step}")


def test_sync_every_global_step_averages_exactly_two_fresh_gradients(cluster):
    """2 workers, replicas_to_aggregate=2, 10 steps each. Worker i's k-th gradient is
    2**-(1+10i+k), so w's final value says exactly which gradients were averaged, and how.
    No initial tokens (num_tokens=0): the first step needs both workers, then each step
    hands out exactly two tokens, so no worker can run ahead and no gradient goes stale."""
    workers = [Worker(cluster, i, sync=True, num_tokens=0) for i in range(2)]
    grads = {i: [2.0 ** -(1 + 10 * i + k) for k in range(10)] for i in range(2)}

    def train(worker):
        with worker.session() as sess:
            worker.run_steps(sess, grads[worker.index])
    _threads(*[lambda w=w: train(w) for w in workers])
    accepted = sum(sum(w.accepted) for w in workers)
    dropped = sum(not a for w in workers for a in w.accepted)
    w_final, step = _read(workers[0], workers[0].w, workers[0].gs)
    assert accepted + dropped == 20
    assert step == accepted / 2 == 10
    assert -w_final == sum(grads[0] + grads[1]) / 2      # exact: averages of pairs


def test_sync_drops_stale_gradients_and_counts_them(cluster):
    """TF's token queue lets a fast worker take both tokens of a step; the other worker's
    gradient (and the fast one's next) then comes from an old step and is dropped."""
    a, b = Worker(cluster, 0, sync=True), Worker(cluster, 1, sync=True)
    with a.session() as sa, b.session() as sb:       # both start at local step 0
        a.step(sa, 1.0)                              # fresh; takes init token 0
        a.step(sa, 2.0)                              # fresh: 2 gradients -> step 1
        _wait_for_step(a, sa, 1)
        b.step(sb, 4.0)                              # local step 0 < 1: dropped
        a.step(sa, 8.0)                              # local step 0 < 1: dropped
        _threads(lambda: a.step(sa, 16.0), lambda: b.step(sb, 32.0))   # fresh pair -> step 2
        _wait_for_step(a, sa, 2)
    w_final, step = _read(a, a.w, a.gs)
    assert a.accepted == [True, True, False, True] and b.accepted == [False, True]
    assert step == 2 == (a.accepted + b.accepted).count(True) / 2
    assert w_final == -((1.0 + 2.0) / 2 + (16.0 + 32.0) / 2)    # dropped ones never applied


def test_sync_with_a_backup_worker_does_not_wait_for_the_slowest(cluster3):
    """3 workers, 2 gradients per step: workers 0 and 1 train on while worker 2 is idle;
    its gradient, computed at local step 0, arrives late and is dropped."""
    workers = [Worker(cluster3, i, sync=True, replicas=2, total=3) for i in range(3)]
    stop = tf.train.StopAtStepHook
    s0, s1 = (w.session([stop(last_step=5)]) for w in workers[:2])   # the chief first
    late = workers[2].session()                      # its local step is 0, like the others'

    def train(worker, sess):
        while not sess.should_stop():
            worker.step(sess, 1.0)
    _threads(lambda: train(workers[0], s0), lambda: train(workers[1], s1))
    assert _read(workers[0], workers[0].gs)[0] >= 5
    workers[2].step(late, 1.0)                       # gets one of the spare tokens at once
    for sess in (late, s1, s0):
        sess.close()
    assert workers[2].accepted == [False]
    assert workers[0].opt._tokens_per_step == 3


def test_async_each_step_updates_the_parameters(cluster):
    """The same run without SyncReplicasOptimizer: 2 workers x 10 steps = global step 20."""
    workers = [Worker(cluster, i) for i in range(2)]

    def train(worker):
        with worker.session() as sess:
            worker.run_steps(sess, [1.0] * 10)
    _threads(*[lambda w=w: train(w) for w in workers])
    w_final, step = _read(workers[0], workers[0].w, workers[0].gs)
    assert step == 20
    assert w_final == -20.0


def test_a_worker_waits_until_the_chief_has_initialized(cluster, caplog):
    chief, other = Worker(cluster, 0), Worker(cluster, 1)
    seen = {}

    def train_other():
        with other.session() as sess:
            seen["first"] = other.step(sess, 1.0)
    with caplog.at_level(logging.INFO, logger="tfteach.train"):
        t = threading.Thread(target=train_other)
        t.start()
        time.sleep(1.0)
        assert t.is_alive()                          # not ready: w is not initialized
        with chief.session() as sess:
            chief.step(sess, 1.0)
            t.join(30)
    assert "first" in seen
    assert "Waiting for model to be ready" in caplog.text
    assert "Variables not initialized: w, global_step" in caplog.text


def test_a_wrong_master_address_fails_with_unavailable(cluster):
    from tfteach.distributed.transport.processes import free_ports
    wrong = f"grpc://localhost:{free_ports(1)[0]}"
    c = tf.constant(1.0)
    with pytest.raises(tf.errors.UnavailableError):
        tf.Session(wrong).run(c)
    w = Worker(cluster, 0)
    w.target = wrong
    with pytest.raises(tf.errors.UnavailableError):
        w.session()


def test_a_wrong_worker_address_in_the_cluster_fails_with_unavailable():
    """A task that never answers: CreateSession waits operation_timeout_in_ms, then says
    which task it waited for (device_filters would have left it out)."""
    from tfteach.distributed.protocol.cluster_spec import ClusterSpec
    from tfteach.distributed.engine.graph_engine import GraphEngine
    from tfteach.distributed.transport.processes import free_ports
    from tfteach.distributed.service.grpc_server import Server
    good, bad = free_ports(2)
    spec = ClusterSpec({"worker": [f"localhost:{good}", f"localhost:{bad}"]})
    server = Server(spec, job_name="worker", task_index=0, engine_factory=GraphEngine)
    try:
        c = tf.constant(1.0) * 2.0
        config = tf.ConfigProto(operation_timeout_in_ms=1000)
        with pytest.raises(tf.errors.UnavailableError, match="task:1"):
            tf.Session(server.target, config=config).run(c)
        config = tf.ConfigProto(device_filters=["/job:worker/task:0"])
        assert tf.Session(server.target, config=config).run(c) == 2.0
    finally:
        server.stop()


def test_the_supervisor_seed_program(cluster):
    """The older seeds: tf.train.Supervisor, managed_session(server.target), should_stop()."""
    workers = [Worker(cluster, i) for i in range(2)]
    steps = {}

    def train(worker):
        with worker.graph.as_default():
            sv = tf.train.Supervisor(is_chief=worker.index == 0, global_step=worker.gs,
                                     logdir=None, recovery_wait_secs=0.1)
        with sv.managed_session(worker.target) as sess:
            step = 0
            while not sv.should_stop() and step < 10:
                _, step = sess.run([worker.train, worker.gs], {worker.c: 1.0})
        sv.stop()
        steps[worker.index] = step
    _threads(*[lambda w=w: train(w) for w in workers])
    assert min(steps.values()) >= 10
    assert _read(workers[0], workers[0].gs)[0] >= 10


def test_the_seed_program_runs_as_one_process_per_task(tmp_path):
    """``python -m tfteach.examples.distributed_digits --job_name=... --task_index=...``"""
    import os
    import subprocess
    import sys

    from tfteach.distributed.transport.processes import free_ports
    from tfteach.examples.distributed_digits import GRAPH_ENGINE
    ports = free_ports(3)
    hosts = [f"--ps_hosts=localhost:{ports[0]}",
             f"--worker_hosts=localhost:{ports[1]},localhost:{ports[2]}"]
    env = dict(os.environ, TFTEACH_ENGINE=GRAPH_ENGINE, TFTEACH_VIRTUAL_GPUS="0")

    def start(job, index, *extra):
        return subprocess.Popen([sys.executable, "-m", "tfteach.examples.distributed_digits",
                                 *hosts, f"--job_name={job}", f"--task_index={index}", *extra],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True)
    ps = start("ps", 0)
    try:
        workers = [start("worker", i, "--sync", "--steps=60", "--log_every=20")
                   for i in range(2)]
        outputs = [w.communicate(timeout=100)[0] for w in workers]
    finally:
        ps.kill()
        ps.communicate()
    assert [w.returncode for w in workers] == [0, 0], outputs
    accuracy = float(outputs[0].split("test accuracy: ")[1].split()[0])
    assert accuracy > 0.8
    # Sync: a step needs two gradients, so worker 1 gave at least one; how many depends on
    # how soon it started (a fast chief may take the spare tokens), so only >= 1 is certain.
    done = re.search(r"worker 1: done after (\d+) local steps", outputs[1])
    assert done, outputs[1]
    assert int(done.group(1)) >= 1
