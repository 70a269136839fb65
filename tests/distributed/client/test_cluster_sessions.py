"""The classic TF 1.x distributed programs on a real LocalCluster (task subprocesses on
loopback)."""
import numpy as np
import pytest

import tfteach as tf
from dist_helpers import ctrl_c_after
from tfteach.cluster import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(ps=1, workers=2) as c:
        yield c


def test_session_on_a_local_cluster_needs_no_token_setup(cluster):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable([[1.0], [2.0]], name="w")
    with tf.device("/job:worker/task:1"):
        y = tf.matmul(tf.constant([[3.0, 4.0]]), w)
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(w.initializer)
        assert sess.run(y).tolist() == [[11.0]]


def test_tasks_have_their_own_devices(cluster):
    sess = tf.Session(cluster.target("worker", 1))
    tf.constant(1.0)
    names = [d.name for d in sess.list_devices()]
    assert "/job:ps/replica:0/task:0/device:CPU:0" in names
    assert "/job:worker/replica:0/task:1/device:CPU:0" in names


def test_killed_task_fails_the_step_then_restart_recovers(cluster):
    with tf.device("/job:worker/task:1"):
        c = tf.constant(2.0) * 3.0
    sess = tf.Session(cluster.target("worker", 0))
    assert sess.run(c) == 6.0
    cluster.kill("worker", 1)
    with pytest.raises(tf.errors.UnavailableError, match="task:1"):
        sess.run(c)
    cluster.restart("worker", 1)
    sess2 = tf.Session(cluster.target("worker", 0))
    assert sess2.run(c) == 6.0


def test_a_task_restarted_between_steps_answers_the_next_step(cluster):
    """The master keeps its RunGraph stream to a task open between steps; once the task
    is killed and restarted, the next step (a new session, as the task lost its graphs)
    must not fail on that stale stream."""
    with tf.device("/job:worker/task:1"):
        c = tf.constant(2.0) * 3.0
    assert tf.Session(cluster.target("worker", 0)).run(c) == 6.0
    cluster.kill("worker", 1)
    cluster.restart("worker", 1)
    assert tf.Session(cluster.target("worker", 0)).run(c) == 6.0


def test_unreachable_task_times_out_with_unavailable(cluster):
    from tfteach.distributed.protocol.cluster_spec import ClusterSpec
    from tfteach.distributed.service.grpc_server import Server
    from tfteach.distributed.transport.processes import free_ports
    p1, p2 = free_ports(2)
    spec = ClusterSpec({"worker": [f"localhost:{p1}"], "ps": [f"localhost:{p2}"]})
    with Server(spec, job_name="worker", task_index=0) as server:
        tf.constant(1.0)
        cfg = tf.ConfigProto(operation_timeout_in_ms=1500)
        with pytest.raises(tf.errors.UnavailableError) as e:
            tf.Session(server.target, config=cfg).run(tf.constant(2.0))
    assert "/job:ps/replica:0/task:0" in str(e.value) and "Hint:" in str(e.value)


def test_hello_distributed_tensorflow_on_a_local_server():
    hello = tf.constant("Hello, distributed TensorFlow!")
    server = tf.train.Server.create_local_server()
    try:
        assert tf.Session(server.target).run(hello) == b"Hello, distributed TensorFlow!"
        assert tf.Session().run(hello) == b"Hello, distributed TensorFlow!"
    finally:
        server.stop()


def test_seed_two_cli_workers_and_a_host(tmp_path):
    """Two `python -m tfteach.server` workers; this process is the host computing across them."""
    import json
    import os
    import subprocess
    import sys
    from tfteach.distributed.transport.processes import free_ports
    ports = free_ports(3)
    hosts = [f"localhost:{p}" for p in ports]
    cfg = tmp_path / "cluster.json"
    cfg.write_text(json.dumps({"cluster": {"worker": hosts[:2], "host": hosts[2:]}}))
    env = {**os.environ, "TFTEACH_VIRTUAL_GPUS": "0"}
    procs = [subprocess.Popen([sys.executable, "-m", "tfteach.server", "--cluster", str(cfg),
                               "--job", "worker", "--task", str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    try:
        server = tf.train.Server(tf.train.ClusterSpec(json.loads(cfg.read_text())["cluster"]),
                                 job_name="host", task_index=0)
        with tf.device("/job:worker/task:0"):
            a = tf.constant([[1.0, 2.0]])
            b = tf.constant([[3.0], [4.0]])
        with tf.device("/job:worker/task:1"):
            c = tf.constant(5.0)
            d = tf.log(100.0 + c)
        out = tf.matmul(a, b) + d
        np.testing.assert_allclose(tf.Session(server.target).run(out), [[11 + np.log(105.0)]],
                                   rtol=1e-6)
        server.stop()
    finally:
        for p in procs:
            p.terminate()
        logs = [p.communicate(timeout=20)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), logs
    assert all("Started server with target: grpc://localhost:" in log for log in logs)


def test_ctrl_c_cancels_the_remote_step_so_the_queue_keeps_its_next_element(cluster):
    """Ctrl-C during a step blocked on the ps (a dequeue from an empty queue) raises
    KeyboardInterrupt at once and aborts the step on the tasks: its dequeue does not linger
    and swallow the element enqueued afterwards, and the next step is not held up. (The
    abort reaches the ps asynchronously, as in TF, within a few hundred ms; the test gives
    it 5 s (a loaded CI machine) before enqueueing. Without the abort the old dequeue waits for a minute.)"""
    import time

    from tfteach.ops.data_flow_ops import FIFOQueue

    with tf.device("/job:ps/task:0"):
        q = FIFOQueue(-1, tf.float32, shapes=(), name="ctrl_c_q", shared_name="ctrl_c_q")
        take = q.dequeue()
        put = q.enqueue(tf.constant(5.0))
    with tf.device("/job:worker/task:0"):
        doubled = take * 2.0
    sess = tf.Session(cluster.target("worker", 0))
    with pytest.raises(KeyboardInterrupt), ctrl_c_after(1.0):
        sess.run(doubled)
    time.sleep(5.0)
    sess.run(put)
    quick = tf.RunOptions(timeout_in_ms=10000)
    assert sess.run(doubled, options=quick) == 10.0


def test_closing_a_session_aborts_its_running_step(cluster):
    """A step of the session waits on the ps (an empty queue); closing the session ends it
    with an error at once instead of leaving it to wait for a minute."""
    import threading

    from tfteach.ops.data_flow_ops import FIFOQueue

    with tf.device("/job:ps/task:0"):
        q = FIFOQueue(-1, tf.float32, shapes=(), name="close_q", shared_name="close_q")
        take = q.dequeue()
    sess = tf.Session(cluster.target("worker", 1))
    sess.run(q.size())                              # the session exists on the master
    outcome = []

    def run():
        try:
            sess.run(take)
        except tf.errors.OpError as e:
            outcome.append(e)
    waiter = threading.Thread(target=run)
    waiter.start()
    waiter.join(1.0)
    assert waiter.is_alive()                        # it really waits
    sess.close()
    waiter.join(20.0)
    assert not waiter.is_alive()
    assert isinstance(outcome[0], (tf.errors.AbortedError, tf.errors.CancelledError))
