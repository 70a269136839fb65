"""The same-host lane (``lane``, ``lane_server``): RunStep and RunGraph streams over an abstract Unix socket.

Steps give the values they give on gRPC and a learner's script runs through it to its exit.
Callers without the token, silent, oversized or malformed callers, a killed task, a client
that goes away and a lane that is gone are handled as on gRPC (in-process servers and
LocalCluster tasks on this host)."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from dist_helpers import as_user

import tfteach as tf
from tfteach import errors
from tfteach.distributed.client import route as route_module
from tfteach.distributed.transport import lane
from tfteach.distributed.transport import lane_server
from tfteach.distributed.transport import shm
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.local.local_cluster import LocalCluster
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.status import error_from_rpc
from tfteach.ops.data_flow_ops import FIFOQueue

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120),
              pytest.mark.skipif(not lane.enabled(), reason="lanes need Linux and /dev/shm")]

TOKEN = "lane-token"


# ---- helpers ----------------------------------------------------------------------------------
def _lane_of(server) -> str:
    client = ClusterClient(TOKEN)
    try:
        return client.worker(server.target).get_status()["lane"]
    finally:
        client.close()


def _connect(name: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect("\0" + name)
    sock.settimeout(10)
    return sock


def _hello(sock: socket.socket, token: str = TOKEN, method: str = "RunGraphStream") -> None:
    lane.send_frame(sock, lane.HELLO, method.encode() + b"\0" + token.encode())


def _answer(sock: socket.socket) -> tuple[int, bytes] | None:
    """The next frame (kind, payload), or None once the task closed the connection."""
    header = lane.read_header(sock)
    if header is None:
        return None
    return header[0], lane.recv_exact(sock, header[1])


def _error(frame: tuple[int, bytes] | None) -> errors.OpError:
    """The tfteach error an ERROR frame stands for (as a client sees it)."""
    assert frame is not None and frame[0] == lane.ERROR, frame
    return error_from_rpc(lane.LaneError.from_payload(frame[1]), "task", "address")


def _stream_threads(settle_s: float = 5.0) -> list[threading.Thread]:
    """The lane stream threads of this process, once those of closed streams ended (a
    stream's thread ends just after its socket closes: it is given ``settle_s``)."""
    deadline = time.monotonic() + settle_s
    while True:
        threads = [t for t in threading.enumerate() if t.name.startswith("tfteach-lane-Run")]
        if not threads or time.monotonic() > deadline:
            return threads
        time.sleep(0.02)


def _echo_graph(server) -> str:
    client = ClusterClient(TOKEN)
    try:
        return client.worker(server.target).register_graph(json.dumps({"probe": "echo"}).encode())
    finally:
        client.close()


def _echo_request(handle: str, value: float = 3.0) -> pb.RunGraphRequest:
    from tfteach.distributed.transport import wire

    request = pb.RunGraphRequest(graph_handle=handle, step_id=1, recv_key=["x"])
    wire.add_named(request.send, {"x": np.array(value, np.float32)})
    return request


def _count_calls(monkeypatch) -> dict[str, int]:
    """Calls made on lane streams and on gRPC streams from this process, by kind."""
    counts = {"lane": 0, "grpc": 0}
    for kind, cls in (("lane", lane.LaneStream), ("grpc", route_module.CallStream)):
        real = cls.call

        def counted(self, request, _real=real, _kind=kind):
            counts[_kind] += 1
            return _real(self, request)
        monkeypatch.setattr(cls, "call", counted)
    return counts


def _softmax(seed: int = 0):
    rng = np.random.default_rng(seed)
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(tf.zeros([20, 4]), name="W")
        b = tf.Variable(tf.zeros([4]), name="b")
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [None, 20])
        y = tf.placeholder(tf.float32, [None, 4])
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y,
                                                                          logits=logits))
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    feed = {x: rng.random((16, 20), dtype=np.float32),
            y: np.eye(4, dtype=np.float32)[rng.integers(0, 4, 16)]}
    return [w, b], loss, train, feed


# ---- steps ------------------------------------------------------------------------------------
def test_steps_on_the_lane_give_the_values_they_give_on_grpc(engine_cluster, monkeypatch):
    """The master (worker 0) runs worker 1's and the ps's parts on their lanes; a session
    made with TFTEACH_LANE=0 runs the same steps on gRPC streams, to the same losses."""
    counts = _count_calls(monkeypatch)
    variables, loss, train, feed = _softmax()
    target = engine_cluster["worker", 0].target
    losses = {}
    for mode in ("1", "0"):
        monkeypatch.setenv(lane.LANE_ENV, mode)
        before = dict(counts)
        with tf.Session(target) as sess:     # CreateSession asks each task for its lane
            sess.run(tf.variables_initializer(variables))
            losses[mode] = [sess.run([train, loss], feed)[1] for _ in range(4)]
        made = {k: counts[k] - before[k] for k in counts}
        assert (made["lane"] > 0, made["grpc"] > 0) == ((True, False) if mode == "1"
                                                        else (False, True)), (mode, made)
    np.testing.assert_allclose(losses["1"], losses["0"], rtol=1e-6)
    assert losses["1"][-1] < losses["1"][0]


LEARNER_SCRIPT = """
import numpy as np, tfteach as tf
from tfteach.cluster import LocalCluster
from tfteach.distributed.transport import lane
calls = []
real = lane.LaneStream.call
lane.LaneStream.call = lambda self, request: calls.append(1) or real(self, request)
cluster = LocalCluster(ps=1, workers=1)
with tf.device("/job:ps/task:0"):
    v = tf.Variable(10.0)
with tf.device("/job:worker/task:0"):
    loss = tf.square(v)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
sess = tf.Session(cluster.target("worker", 0))
sess.run(v.initializer)
losses = [sess.run([train, loss])[1] for _ in range(20)]
print(len(calls), losses[0], losses[-1], flush=True)
"""


def test_a_learners_script_trains_through_the_lane_and_exits():
    """Run as a learner runs it (no cleanup code): RunStep goes on the master's lane, and
    the process ends by itself."""
    done = subprocess.run([sys.executable, "-c", LEARNER_SCRIPT], capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    calls, first, last = done.stdout.split()
    assert int(calls) >= 21         # the initializer's step and 20 training steps
    assert float(first) >= 64.0 and float(last) < 1.0


# ---- trust at the edge -------------------------------------------------------------------------
def test_a_wrong_token_is_refused_unauthenticated_with_no_thread(make_server):
    server = make_server(token=TOKEN)
    name = _lane_of(server)
    with _connect(name) as sock:
        _hello(sock, token="not-the-token-1234")
        err = _error(_answer(sock))
        assert _answer(sock) is None            # and the connection is closed
    assert isinstance(err, errors.UnauthenticatedError)
    assert "missing or wrong cluster token" in err.message
    assert "not-the-token" not in err.message + err.hint
    assert _stream_threads() == []


def test_a_task_without_a_token_takes_any_token_on_its_lane_as_on_grpc(make_server):
    """One check (``security.token_allows``) serves gRPC, the lane and the in-process
    master: a task without a token refuses no caller on any of them."""
    server = make_server(token=None)
    name, handle = _lane_of(server), _echo_graph(server)
    stream = lane.LaneStream(name, "RunGraphStream", "a-token-it-never-asked-for",
                             pb.RunGraphResponse)
    try:
        answer = stream.call(_echo_request(handle, 5.0))
    finally:
        stream.close()
    assert answer.recv[0].name == "x"
    client = ClusterClient("a-token-it-never-asked-for")
    try:
        assert client.worker(server.target).get_status()["lane"] == name
    finally:
        client.close()


def test_silent_callers_hold_no_thread_and_are_dropped_while_the_lane_serves(make_server,
                                                                                monkeypatch):
    monkeypatch.setattr(lane_server, "HELLO_TIMEOUT_S", 0.5)
    server = make_server(token=TOKEN)
    name, handle = _lane_of(server), _echo_graph(server)
    silent = [_connect(name) for _ in range(40)]
    try:
        assert _stream_threads(settle_s=0.2) == []  # (they are dropped at 0.5 s)
        stream = lane.LaneStream(name, "RunGraphStream", TOKEN, pb.RunGraphResponse)
        answer = stream.call(_echo_request(handle, 7.0))
        stream.close()
        for sock in silent:
            assert _answer(sock) is None        # closed by the task, unanswered
    finally:
        for sock in silent:
            sock.close()
    assert answer.recv[0].name == "x"


def test_a_hello_past_its_limit_is_dropped_unanswered(make_server):
    server = make_server(token=TOKEN)
    with _connect(_lane_of(server)) as sock:
        sock.sendall(lane.HEADER.pack(lane.HELLO, 1 << 30))
        assert _answer(sock) is None


def test_a_request_larger_than_the_task_reads_is_refused_unread(make_server):
    server = make_server(token=TOKEN, max_message_bytes=4096)
    with _connect(_lane_of(server)) as sock:
        _hello(sock)
        sock.sendall(lane.HEADER.pack(lane.REQUEST, 1 << 30))      # and never the payload
        err = _error(_answer(sock))
    assert isinstance(err, errors.ResourceExhaustedError)
    assert "larger than max (1073741824 vs. 4096)" in err.message
    assert "TFTEACH_MAX_MESSAGE_BYTES" in err.hint


@pytest.mark.parametrize("frame", [(lane.REQUEST, b"\xff\xff\xff\xff"), (lane.HELLO, b"x")],
                         ids=["garbage", "wrong-kind"])
def test_a_malformed_request_gets_invalid_argument_and_the_lane_serves_on(make_server, frame):
    server = make_server(token=TOKEN)
    name, handle = _lane_of(server), _echo_graph(server)
    with _connect(name) as sock:
        _hello(sock)
        lane.send_frame(sock, *frame)
        err = _error(_answer(sock))
    assert isinstance(err, errors.InvalidArgumentError), err
    assert "tfteach_cluster.proto" in err.hint
    stream = lane.LaneStream(name, "RunGraphStream", TOKEN, pb.RunGraphResponse)
    try:
        assert stream.call(_echo_request(handle)).recv[0].name == "x"
    finally:
        stream.close()


def test_a_method_the_lane_does_not_serve_is_unimplemented(make_server):
    server = make_server(token=TOKEN)
    with _connect(_lane_of(server)) as sock:
        _hello(sock, method="CleanupAll")
        err = _error(_answer(sock))
    assert isinstance(err, errors.UnimplementedError) and "CleanupAll" in err.message


def test_a_lane_that_is_gone_falls_back_to_grpc(make_server, monkeypatch):
    """A task that restarted has a new lane: a client that knew the old one sends on gRPC."""
    counts = _count_calls(monkeypatch)
    server = make_server(token=TOKEN)
    handle = _echo_graph(server)
    client = ClusterClient(TOKEN)
    try:
        worker = client.worker(server.target)
        worker.route.learn_lane("tfteach-lane-gone", shm.host_key())
        tensors, _ = worker.run_graph(handle, 1, {"x": np.float32(2.0)}, ["x"])
        again, _ = worker.run_graph(handle, 2, {"x": np.float32(3.0)}, ["x"])
    finally:
        client.close()
    assert (float(tensors["x"]), float(again["x"])) == (2.0, 3.0)
    assert counts == {"lane": 0, "grpc": 2}


def test_streams_past_the_tasks_limit_are_refused_busy_and_calls_still_get_through(
        make_server, monkeypatch):
    """Lane streams count against the task's stream limit with its gRPC streams: one more
    is refused before it runs (``BUSY_KEY``), and the client sends the call as a unary
    gRPC call instead."""
    from tfteach.distributed.protocol import limits

    monkeypatch.setattr(limits, "MAX_STREAMS", 2)
    server = make_server(token=TOKEN)
    name, handle = _lane_of(server), _echo_graph(server)
    held = [lane.LaneStream(name, "RunGraphStream", TOKEN, pb.RunGraphResponse)
            for _ in range(3)]
    client = ClusterClient(TOKEN)
    try:
        for stream in held[:2]:
            stream.call(_echo_request(handle))
        with pytest.raises(lane.LaneError) as info:
            held[2].call(_echo_request(handle))
        worker = client.worker(server.target)
        worker.get_status()         # learns the lane, which has no stream free
        tensors, _ = worker.run_graph(handle, 3, {"x": np.float32(4.0)}, ["x"])
    finally:
        client.close()
        for stream in held:
            stream.close()
    assert limits.is_busy(info.value) and isinstance(error_from_rpc(info.value),
                                                     errors.ResourceExhaustedError)
    assert float(tensors["x"]) == 4.0


def test_a_stream_idle_past_the_limit_is_closed_by_the_task(make_server, monkeypatch):
    from tfteach.distributed.protocol import limits

    monkeypatch.setattr(limits, "STREAM_IDLE_S", 0.5)
    server = make_server(token=TOKEN)
    name, handle = _lane_of(server), _echo_graph(server)
    stream = lane.LaneStream(name, "RunGraphStream", TOKEN, pb.RunGraphResponse)
    try:
        stream.call(_echo_request(handle))
        deadline = time.monotonic() + 10
        while stream.open() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not stream.open()
    finally:
        stream.close()
    assert _stream_threads() == []


# ---- failures on either side -------------------------------------------------------------------
def _blocking_dequeue(name: str):
    from tfteach.ops.data_flow_ops import FIFOQueue

    with tf.device("/job:worker/task:0"):
        q = FIFOQueue(-1, tf.float32, shapes=(), name=name, shared_name=name)
        return q.dequeue() * 2.0, q.enqueue(tf.constant(5.0))


def test_a_task_killed_during_a_step_fails_it_with_unavailable():
    """kill -9 of the master while its RunStep waits on the lane: UnavailableError naming
    the task's address, at once."""
    with LocalCluster(ps=1, workers=1) as cluster:
        take, _ = _blocking_dequeue("killed_q")
        sess = tf.Session(cluster.target("worker", 0))
        threading.Timer(1.0, cluster.kill, ("worker", 0)).start()
        started = time.monotonic()
        with pytest.raises(errors.UnavailableError) as info:
            sess.run(take)
        assert time.monotonic() - started < 30
        assert cluster.target("worker", 0)[len("grpc://"):] in info.value.message


CLIENT_THAT_WAITS = """
import sys, tfteach as tf
from tfteach.ops.data_flow_ops import FIFOQueue
with tf.device("/job:worker/task:0"):
    q = FIFOQueue(-1, tf.float32, shapes=(), name="gone_q", shared_name="gone_q")
    take = q.dequeue() * 2.0
sess = tf.Session(sys.argv[1])
sess.run(q.size())
print("waiting", flush=True)
sess.run(take)
"""


def _kill_while_waiting(script: str, cluster: LocalCluster, **env: str) -> None:
    """Run the client ``script`` against worker 0 of ``cluster`` and kill -9 it once it
    says it is waiting (its step then waits on the task)."""
    env = {**__import__("os").environ, "TFTEACH_CLUSTER_TOKEN": cluster.token, **env}
    proc = subprocess.Popen([sys.executable, "-c", script, cluster.target("worker", 0)],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "waiting"
        time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait()


def test_a_client_killed_during_a_step_cancels_it_on_the_task():
    """A client's RunStep waits on the lane (a dequeue from an empty queue); kill -9 of the
    client aborts that step, so it does not swallow the element enqueued afterwards."""
    with LocalCluster(ps=1, workers=1) as cluster:
        _kill_while_waiting(CLIENT_THAT_WAITS, cluster)
        time.sleep(1.0)
        take, put = _blocking_dequeue("gone_q")
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(put)
            assert sess.run(take, options=tf.RunOptions(timeout_in_ms=10000)) == 10.0


CLIENT_THAT_PIPELINES = """
import os, signal, socket, sys, time
import tfteach as tf
from tfteach.distributed.transport import lane
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.ops.data_flow_ops import FIFOQueue
target, token = sys.argv[1], os.environ["TFTEACH_CLUSTER_TOKEN"]
with tf.device("/job:worker/task:0"):
    q = FIFOQueue(-1, tf.float32, shapes=(), name="piped_q", shared_name="piped_q")
    take = q.dequeue() * 2.0
sess = tf.Session(target)
sess.run(q.size())
name = ClusterClient(token).worker(target[len("grpc://"):]).get_status()["lane"]
request = pb.RunStepRequest(session_handle=sess._handle, fetch=[take.name])
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect("\\0" + name)
lane.send_frame(sock, lane.HELLO, b"RunStepStream\\0" + token.encode())
lane.send_frame(sock, lane.REQUEST, request.SerializeToString())
time.sleep(0.3)     # the task runs the step (it waits for an element), then:
lane.send_frame(sock, lane.REQUEST, request.SerializeToString())
time.sleep(0.3)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _descriptors(pid: int) -> int:
    import os

    return len(os.listdir(f"/proc/{pid}/fd"))


def test_a_client_that_pipelined_a_request_and_died_leaves_no_step_running():
    """A client sends a step that waits (a dequeue from an empty queue), a second request
    behind it before the answer, then is killed -9: its step is cancelled, so it does not
    take the element enqueued afterwards, and its connection is closed on the task."""
    with LocalCluster(ps=0, workers=1) as cluster:
        pid = cluster._record("worker", 0)["pid"]
        with tf.device("/job:worker/task:0"):
            q = FIFOQueue(-1, tf.float32, shapes=(), name="piped_q", shared_name="piped_q")
            take, put = q.dequeue() * 2.0, q.enqueue(tf.constant(5.0))
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(q.size())
            before = _descriptors(pid)
            env = {**__import__("os").environ, "TFTEACH_CLUSTER_TOKEN": cluster.token}
            done = subprocess.run([sys.executable, "-c", CLIENT_THAT_PIPELINES,
                                   cluster.target("worker", 0)], env=env, timeout=60,
                                  capture_output=True, text=True)
            assert done.returncode == -9, done.stderr
            deadline = time.monotonic() + 10
            while _descriptors(pid) > before and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _descriptors(pid) <= before, "the dead client's connection is still open"
            sess.run(put)
            assert sess.run(take, options=tf.RunOptions(timeout_in_ms=10000)) == 10.0
            assert sess.run(q.size()) == 0


def test_a_client_killed_during_a_step_on_grpc_frees_both_tasks():
    """Without lanes (gRPC streams), kill -9 of a client whose step waits on the ps: the
    master aborts the step there too, both tasks close the client's connections, and the
    next client's step takes the element."""
    script = CLIENT_THAT_WAITS.replace('"/job:worker/task:0"', '"/job:ps/task:0"')
    with LocalCluster(ps=1, workers=1) as cluster:
        pids = [cluster._record(job, 0)["pid"] for job in ("worker", "ps")]
        with tf.device("/job:ps/task:0"):
            q = FIFOQueue(-1, tf.float32, shapes=(), name="gone_q", shared_name="gone_q")
            take, put = q.dequeue() * 2.0, q.enqueue(tf.constant(5.0))
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(q.size())      # the master's channel to the ps is open from here on
            before = [_descriptors(pid) for pid in pids]
            _kill_while_waiting(script, cluster, TFTEACH_LANE="0")
            deadline = time.monotonic() + 10
            while any(_descriptors(p) > b for p, b in zip(pids, before, strict=True)) \
                    and time.monotonic() < deadline:
                time.sleep(0.1)
            assert all(_descriptors(p) <= b for p, b in zip(pids, before, strict=True))
            sess.run(put)
            assert sess.run(take, options=tf.RunOptions(timeout_in_ms=10000)) == 10.0


OTHER_UID_CLIENT = """
import socket, struct, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(10)
sock.connect("\\0" + sys.argv[1])
hello = b"RunGraphStream\\0" + sys.argv[2].encode()
try:
    sock.sendall(struct.pack("<BI", 1, len(hello)) + hello)
    print(repr(sock.recv(100)))
except OSError as err:
    print(type(err).__name__)
"""


def test_another_user_is_refused_even_with_the_token(make_server):
    """The lane is for the task's own user: a process of another uid that knows the token
    is closed at once, unanswered (the stdlib-only client runs on the system Python)."""
    import os
    import shutil

    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if os.geteuid() != 0 or system_python is None:
        pytest.skip("needs root and a system Python to run a client as another uid")
    server = make_server(token=TOKEN)
    done = subprocess.run(as_user([system_python, "-c", OTHER_UID_CLIENT, _lane_of(server),
                                   TOKEN]), capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() in ("b''", "ConnectionResetError", "BrokenPipeError"), \
        done.stdout
    assert _stream_threads() == []


def test_a_forked_child_does_not_reuse_its_parents_stream(make_server):
    import os

    server = make_server(token=TOKEN)
    stream = lane.LaneStream(_lane_of(server), "RunGraphStream", TOKEN, pb.RunGraphResponse)
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if not stream.open() else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0 and stream.open()
    finally:
        stream.close()
