"""Conformance of state on servers and grpc:// sessions: the same programs on tfteach's and on
TensorFlow's in-process servers (``tf.train.Server.create_local_server()``), compared.

Containers and ``Session.reset``, ``isolate_session_state``, input producers and their queue
runners, a second server on a busy port, concurrent steps of one session, where a server's
``log_device_placement`` logs, and the partition graphs of a step over two tasks. Runs only
where TensorFlow is installed.
"""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.conformance, pytest.mark.cluster, pytest.mark.timeout(180)]

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

WAIT_MS = 20000
ROOT = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def strict_devices(monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    tf1.reset_default_graph()
    tfteach.reset_default_graph()


def both(program):
    """``program(tf, server)`` on each runtime with a fresh local server: [ours, theirs]."""
    out = []
    for mod in (tfteach, tf1):
        server = mod.train.Server.create_local_server()
        with mod.Graph().as_default():
            out.append(program(mod, server))
        if mod is tfteach:
            server.stop()
    return out


def outcome(tf, sess, fetch):
    """A fetched value as a Python number, or the name of the error class."""
    try:
        value = sess.run(fetch, options=tf.RunOptions(timeout_in_ms=WAIT_MS))
        return value.tolist() if hasattr(value, "tolist") else value
    except tf.errors.OpError as error:
        return type(error).__name__


def test_reset_clears_the_named_containers_then_the_default_one_as_tf():
    def program(tf, server):
        with tf.container("test0"):
            v0 = tf.Variable(1.0, name="v0")
        with tf.container("test1"):
            v1 = tf.Variable(2.0, name="v1")
        v2 = tf.Variable(3.0, name="v2")
        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
        seen = []
        for containers in (["test0"], None):
            tf.Session.reset(server.target, containers)
            with tf.Session(server.target) as sess:
                seen.append([outcome(tf, sess, v) for v in (v0, v1, v2)])
        return seen

    ours, theirs = both(program)
    assert ours == theirs == [["FailedPreconditionError", 2.0, 3.0],
                              ["FailedPreconditionError", 2.0, "FailedPreconditionError"]]


def test_reset_empties_a_queue_of_its_container_as_tf():
    def program(tf, server):
        with tf.container("queues"):
            q = tf.FIFOQueue(10, tf.float32, shared_name="q")
        enqueue, size = q.enqueue(1.0), q.size()
        with tf.Session(server.target) as sess:
            sess.run(enqueue)
            before = outcome(tf, sess, size)
        tf.Session.reset(server.target, ["queues"])
        with tf.Session(server.target) as sess:
            return before, outcome(tf, sess, size)

    ours, theirs = both(program)
    assert ours == theirs == (1, 0)


def test_isolate_session_state_keeps_variables_apart_as_tf():
    def program(tf, server):
        w = tf.Variable(0.0, name="w")
        isolated = tf.ConfigProto(isolate_session_state=True)
        shared = tf.Session(server.target)
        shared.run(w.initializer)
        own = tf.Session(server.target, config=isolated)
        seen = [outcome(tf, own, w)]
        own.run(w.assign(5.0))
        seen += [outcome(tf, shared, w), outcome(tf, own, w)]
        seen.append(outcome(tf, tf.Session(server.target, config=isolated), w))
        return seen

    ours, theirs = both(program)
    assert ours == theirs == ["FailedPreconditionError", 0.0, 5.0, "FailedPreconditionError"]


def test_input_producers_give_the_same_values_then_out_of_range_as_tf():
    def program(tf, server):
        rows = tf.train.input_producer(tf.constant([[1, 2], [3, 4], [5, 6]]), num_epochs=2,
                                       shuffle=False, capacity=4).dequeue()
        words = tf.train.string_input_producer(["a", "b"], num_epochs=1, shuffle=False).dequeue()
        numbers = tf.train.range_input_producer(3, num_epochs=1, shuffle=False).dequeue()
        pairs = tf.train.slice_input_producer([tf.constant([1, 2]), tf.constant([10.0, 20.0])],
                                              num_epochs=1, shuffle=False)
        local = [v.op.name for v in tf.local_variables()]
        with tf.Session(server.target) as sess:
            sess.run(tf.local_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord)
            seen = [[outcome(tf, sess, t) for _ in range(n + 1)]
                    for t, n in ((rows, 6), (words, 2), (numbers, 3), (pairs, 2))]
            coord.request_stop()
            coord.join(threads)
        return local, seen

    ours, theirs = both(program)
    assert ours == theirs
    assert ours[1][0] == [[1, 2], [3, 4], [5, 6], [1, 2], [3, 4], [5, 6], "OutOfRangeError"]


def test_a_second_server_on_a_busy_port_fails_as_tf():
    def program(tf, server):
        port = server.target.rsplit(":", 1)[1]
        try:
            tf.train.Server({"local": [f"localhost:{port}"]}, protocol="grpc")
        except tf.errors.OpError as error:
            return type(error).__name__, error.message
        return "started", ""

    ours, theirs = both(program)
    assert ours == theirs == ("UnknownError", "Could not start gRPC server")


def test_a_step_runs_while_another_step_of_the_session_waits_in_a_dequeue_as_tf():
    def program(tf, server):
        q = tf.FIFOQueue(10, tf.float32)
        dequeue, enqueue = q.dequeue(), q.enqueue(7.0)
        sess = tf.Session(server.target)
        got = []
        waiter = threading.Thread(target=lambda: got.append(outcome(tf, sess, dequeue)))
        waiter.start()
        time.sleep(0.5)     # let the dequeue start waiting (either order must work)
        sess.run(enqueue, options=tf.RunOptions(timeout_in_ms=WAIT_MS))
        waiter.join(2 * WAIT_MS / 1000)
        return got

    ours, theirs = both(program)
    assert ours == theirs == [7.0]


def _ps_and_worker(tf):
    """A ps and a worker task as in-process servers on free loopback ports."""
    import socket

    ports = []
    for _ in range(2):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            ports.append(sock.getsockname()[1])
    spec = tf.train.ClusterSpec({"ps": [f"localhost:{ports[0]}"],
                                 "worker": [f"localhost:{ports[1]}"]})
    return [tf.train.Server(spec, job_name=job, task_index=0) for job in ("ps", "worker")]


TRANSPORT = {"_Send", "_Recv", "_Arg", "_Retval"}


def _crossing(node) -> bool:
    """A _Send or _Recv between tasks (TF also sends fetches and receives feeds with
    client-terminated ones, where tfteach's graphs have _Retval and _Arg, as locally)."""
    if node.op not in ("_Send", "_Recv"):
        return False
    flag = node.attr.get("client_terminated", False)
    return not (flag.b if hasattr(flag, "b") else flag)


def test_partition_graphs_of_a_step_over_two_tasks_as_tf():
    def program(tf):
        servers = _ps_and_worker(tf)
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(2.0, name="v")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, name="x")
            y = tf.multiply(v, x, name="y")
        config = tf.ConfigProto()
        if tf is tf1:
            config.graph_options.rewrite_options.disable_meta_optimizer = True
        seen = []
        with tf.Session(servers[1].target, config=config) as sess:
            for fetch, feeds in ((v.initializer, None), (y, {x: 3.0})):
                md = tf.RunMetadata()
                sess.run(fetch, feeds, options=tf.RunOptions(output_partition_graphs=True),
                         run_metadata=md)
                seen.append(sorted((sorted({n.device for n in g.node}),
                                    sorted(n.name for n in g.node if n.op not in TRANSPORT),
                                    sorted({n.op for n in g.node if _crossing(n)}))
                                   for g in md.partition_graphs))
        if tf is tfteach:
            for server in servers:
                server.stop()
        return seen

    ours, theirs = [program(mod) for mod in (tfteach, tf1)]
    assert ours == theirs
    assert len(ours[1]) == 2


SERVER = """
import sys
if sys.argv[1] == "tf":
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
else:
    import tfteach as tf
s = tf.train.Server.create_local_server(config=tf.ConfigProto(log_device_placement=True))
print(s.target, flush=True)
sys.stdin.read()    # serve until the test closes our stdin, then exit (flushing the log)
"""

CLIENT = """
import sys
if sys.argv[1] == "tf":
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
else:
    import tfteach as tf
a = tf.constant(1.0, name="aaa")
b = tf.add(a, a, name="bbb")
print("result", tf.Session(sys.argv[2]).run(b), flush=True)
"""


def _logs(runtime: str) -> tuple[str, str]:
    """(server's stderr, client's stdout + stderr) of one step on a server whose config
    sets log_device_placement, each in its own process."""
    server = subprocess.Popen([sys.executable, "-c", SERVER, runtime], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env())
    try:
        target = server.stdout.readline().strip()
        client = subprocess.run([sys.executable, "-c", CLIENT, runtime, target], cwd=ROOT,
                                capture_output=True, text=True, timeout=120, env=_env())
    finally:
        _, server_err = server.communicate("", timeout=60)
    assert "result 2.0" in client.stdout, client.stderr[-2000:]
    return server_err, client.stdout + client.stderr


def _env() -> dict:
    """This process's environment without GRPC_VERBOSITY (importing tfteach's cluster layer
    sets it to ERROR, which also hides TF's INFO log lines, the placement log among them)."""
    import os
    env = {k: v for k, v in os.environ.items() if k != "GRPC_VERBOSITY"}
    return {**env, "TFTEACH_VIRTUAL_GPUS": "0", "CUDA_VISIBLE_DEVICES": ""}


@pytest.mark.slow
def test_a_servers_log_device_placement_logs_on_the_servers_stderr_as_tf():
    for runtime in ("tfteach", "tf"):
        server_err, client_out = _logs(runtime)
        assert "bbb: (A" in server_err and "/job:localhost/replica:0/task:0/device:CPU:0" in \
            server_err, runtime
        assert "bbb: (A" not in client_out, runtime
