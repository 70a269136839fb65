"""A step's deadline bounds every call to a master that has stopped answering (SIGSTOP), and
the master's RunGraph calls to a worker that has, as in TF (DeadlineExceededError naming the
task, with a hint); a peer that answers something other than tfteach's gRPC is
UnavailableError naming its address."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time

import pytest

import tfteach as tf
from tfteach import errors

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def frozen_master():
    """A LocalCluster worker with a session made while it ran, then stopped (SIGSTOP)."""
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=0, workers=1) as cluster:
        graph = tf.Graph()
        with graph.as_default():
            x = tf.constant(2.0) * 3.0
        session = tf.Session(cluster.target("worker", 0), graph=graph)
        assert session.run(x) == 6.0
        with _stopped(cluster._record("worker", 0)["pid"]):
            yield cluster, session, x


@contextlib.contextmanager
def _stopped(pid: int):
    """Process ``pid`` stopped (SIGSTOP) inside the block, continued (SIGCONT) after it.
    The block starts once the process is stopped (the signal stops it asynchronously: a
    call on its lane could otherwise be answered in between)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        _wait_until_stopped(pid)
        yield pid
    finally:
        os.kill(pid, signal.SIGCONT)


def _wait_until_stopped(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    with open(f"/proc/{pid}/stat") as stat:
        while stat.read().rpartition(")")[2].split()[0] not in "tT":
            assert time.monotonic() < deadline, f"process {pid} did not stop"
            time.sleep(0.005)
            stat.seek(0)


def _timed(call):
    start = time.monotonic()
    with pytest.raises(errors.DeadlineExceededError) as caught:
        call()
    return caught.value, time.monotonic() - start


def test_run_options_timeout_bounds_a_step_on_a_stopped_master(frozen_master):
    cluster, session, x = frozen_master
    err, took = _timed(lambda: session.run(x, options=tf.RunOptions(timeout_in_ms=300)))
    assert took < 5.0
    assert "Deadline Exceeded" in err.message
    assert cluster.target("worker", 0).split("//")[-1] in err.message
    assert "Hint:" in str(err) and "timeout" in str(err)


def test_operation_timeout_bounds_a_new_session_on_a_stopped_master(frozen_master):
    cluster, _, _ = frozen_master
    graph = tf.Graph()
    with graph.as_default():
        y = tf.constant(1.0) + 1.0
    config = tf.ConfigProto(operation_timeout_in_ms=300)
    session = tf.Session(cluster.target("worker", 0), graph=graph, config=config)
    err, took = _timed(lambda: session.run(y))
    assert took < 5.0
    assert "Deadline Exceeded" in err.message


def _garbage_server(reply: bytes):
    """A plain TCP server on loopback that answers every connection with ``reply``."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(65536)
                    conn.sendall(reply)
                    time.sleep(0.2)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return listener


def test_a_peer_answering_http1_is_unavailable_naming_it(client):
    listener = _garbage_server(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    address = f"127.0.0.1:{listener.getsockname()[1]}"
    try:
        with pytest.raises(errors.UnavailableError) as caught:
            client.worker(address, "/job:worker/replica:0/task:0").get_status(timeout=5)
    finally:
        listener.close()
    assert address in caught.value.message
    assert "Hint:" in str(caught.value)


def test_a_grpc_answer_that_does_not_parse_is_unavailable_naming_it(client):
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.method_handlers_generic_handler("tfteach.cluster.WorkerService", {
        "GetStatus": grpc.unary_unary_rpc_method_handler(
            lambda request, context: b"\xff\xff\xff\xff garbage",
            request_deserializer=None, response_serializer=None)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    address = f"127.0.0.1:{port}"
    try:
        with pytest.raises(errors.UnavailableError) as caught:
            client.worker(address, "/job:worker/replica:0/task:0").get_status(timeout=5)
    finally:
        server.stop(0)
    assert address in caught.value.message
    assert "Hint:" in str(caught.value)


@pytest.fixture(scope="module")
def frozen_ps():
    """A LocalCluster whose ps task is stopped (SIGSTOP) after a step of a session on worker
    0 (the master) ran a part on it; SIGCONT again when the tests end."""
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=1, workers=1) as cluster:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                a = tf.constant(2.0) * 3.0
            with tf.device("/job:worker/task:0"):
                x = a + 1.0
        config = tf.ConfigProto(operation_timeout_in_ms=400)
        sessions = [tf.Session(cluster.target("worker", 0), graph=graph, config=c)
                    for c in (None, config)]
        assert [s.run(x) for s in sessions] == [7.0, 7.0]
        with _stopped(cluster._record("ps", 0)["pid"]) as pid:
            yield sessions, x, pid


@pytest.mark.parametrize("how", ["run_options", "operation_timeout"])
def test_run_graph_to_a_stopped_worker_fails_at_the_deadline_naming_it(frozen_ps, how):
    (plain, configured), x, _ = frozen_ps
    if how == "run_options":
        err, took = _timed(lambda: plain.run(x, options=tf.RunOptions(timeout_in_ms=400)))
    else:
        err, took = _timed(lambda: configured.run(x))
    assert took < 5.0
    assert "/job:ps/replica:0/task:0" in err.message and "timed out" in err.message
    assert "Hint:" in str(err) and "Check that its process runs" in str(err)


def test_the_step_after_the_worker_continues_runs(frozen_ps):
    (plain, _), x, pid = frozen_ps
    with pytest.raises(errors.DeadlineExceededError):
        plain.run(x, options=tf.RunOptions(timeout_in_ms=300))
    os.kill(pid, signal.SIGCONT)
    try:
        assert plain.run(x, options=tf.RunOptions(timeout_in_ms=20000)) == 7.0
    finally:
        os.kill(pid, signal.SIGSTOP)


@pytest.fixture(scope="module")
def one_task():
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=0, workers=1) as cluster:
        yield cluster


def _stream_calls(monkeypatch) -> list[str]:
    """The kinds of stream call (``lane``, ``grpc``) this process makes from now on."""
    from tfteach.distributed.client import route
    from tfteach.distributed.transport import lane

    calls = []
    for kind, cls in (("lane", lane.LaneStream), ("grpc", route.CallStream)):
        def counted(self, request, _real=cls.call, _kind=kind):
            calls.append(_kind)
            return _real(self, request)
        monkeypatch.setattr(cls, "call", counted)
    return calls


@pytest.mark.parametrize("path", ["lane", "grpc"])
def test_a_timed_step_goes_on_a_stream_and_fails_at_its_deadline(one_task, monkeypatch, path):
    """A step with a timeout travels on the task's stream (its lane, or a gRPC stream) like
    any other; a stopped task fails it at the deadline, naming the task, and the stream it
    waited on is closed: the step after SIGCONT gets its own answer, not the late one."""
    if path == "grpc":
        monkeypatch.setenv("TFTEACH_LANE", "0")
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [])
        y = x * 2.0
    options = tf.RunOptions(timeout_in_ms=300)
    with tf.Session(one_task.target("worker", 0), graph=graph) as session:
        calls = _stream_calls(monkeypatch)
        assert session.run(y, {x: 0.5}, options=options) == 1.0
        assert calls == [path]
        with _stopped(one_task._record("worker", 0)["pid"]):
            err, took = _timed(lambda: session.run(y, {x: 1.0}, options=options))
        assert calls == [path, path]
        assert 0.29 < took < 5.0
        assert "Deadline Exceeded" in err.message and "timed out" in err.message
        assert one_task.target("worker", 0).split("//")[-1] in err.message
        assert session.run(y, {x: 2.0}, options=options) == 4.0
        assert session.run(y, {x: 3.0}) == 6.0
