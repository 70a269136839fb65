"""Large tensors between hosts leave on a task's bulk port (a plain socket), intact, only
for a caller that knows the token, and stream through gRPC where the port is unreachable."""
import socket
import struct
import subprocess
import sys
import threading

import grpc
import numpy as np
import pytest

from tfteach import errors
from tfteach.distributed.transport import bulk
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.transport.processes import free_ports
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc

TOKEN = "bulk-test-token"
MiB = 1 << 20
OTHER_HOST = "other-host/x/1"


def _left_to_stream(server, step, value):
    """Put ``value`` on ``server`` and ask for it as a receiver on another host would:
    the answer leaves it under a stream key and names the bulk port."""
    server.engine.put_tensor(step, "k", value)
    stub = pb_grpc.WorkerServiceStub(grpc.insecure_channel(server.target[7:]))
    reply = stub.RecvTensorInline(pb.RecvTensorRequest(
        step_id=step, rendezvous_key="k", timeout_s=10, shm_host=OTHER_HOST), timeout=10,
        metadata=(("tfteach-token", TOKEN),))
    assert reply.stream_key and reply.bulk_port == server._bulk.port
    return reply


@pytest.mark.parametrize("value", [
    np.random.default_rng(0).standard_normal(MiB // 2).astype(np.float32).reshape(1024, 512),
    np.arange(3 * MiB, dtype=np.uint8) % 7 == 0,
    np.array([b"x" * MiB, b"", "\u00e9t\u00e9".encode()] * 2, dtype=object).reshape(2, 3),
], ids=["float32", "bool", "string"])
def test_a_tensor_left_to_stream_arrives_intact_on_the_bulk_port(make_server, value):
    server = make_server(token=TOKEN)
    reply = _left_to_stream(server, 1, value)
    client = bulk.BulkClient(TOKEN)
    try:
        got, is_dead = client.fetch(server.target[7:], reply.bulk_port, 1, reply.stream_key,
                                    10)
    finally:
        client.close()
    assert got.dtype == value.dtype and got.shape == value.shape and not is_dead
    np.testing.assert_array_equal(got, value)
    assert server._bulk.sent == 1


def test_a_worker_client_pulls_a_large_tensor_over_the_bulk_port(make_server):
    server = make_server(token=TOKEN)
    value = np.arange(MiB, dtype=np.float64)            # 8 MiB, over INLINE_BYTES
    client = ClusterClient(TOKEN)
    try:
        for step in (3, 4):     # the second on the kept connection
            server.engine.put_tensor(step, "edge", value + step)
            got, _ = client.worker(server.target).recv_tensor(step, "edge", timeout=10,
                                                              use_shm=False)
            np.testing.assert_array_equal(got, value + step)
    finally:
        client.close()
    assert server._bulk.sent == 2


def _ask_with_hello(server, key, token, grpc_port):
    """Send a HELLO and a request on a raw connection; what comes back before it closes."""
    sock = socket.create_connection(("127.0.0.1", server._bulk.port), timeout=5)
    request = pb.RecvTensorRequest(step_id=1, rendezvous_key=key,
                                   timeout_s=5).SerializeToString()
    try:
        sock.sendall(bulk.MAGIC + struct.pack("!II", 4 + len(token), grpc_port) + token +
                     struct.pack("!I", len(request)) + request)
        return sock.recv(16)
    except ConnectionResetError:
        return b""
    finally:
        sock.close()


@pytest.mark.parametrize("wrong", ["token", "task"])
def test_a_wrong_token_or_task_gets_the_connection_closed_and_no_tensor(make_server, wrong):
    server = make_server(token=TOKEN)
    reply = _left_to_stream(server, 1, np.ones(2 * MiB, np.uint8))
    port = int(server.target.rsplit(":", 1)[1])
    token, port = (b"not-" + TOKEN.encode(), port) if wrong == "token" else \
        (TOKEN.encode(), port + 1)     # a task that restarted, its bulk port reused
    assert _ask_with_hello(server, reply.stream_key, token, port) == b""
    assert server._bulk.sent == 0
    assert server.engine.rendezvous.pending() == [(1, reply.stream_key)]   # still there


def test_a_bulk_request_waits_for_its_tensor_to_be_sent(make_server):
    server = make_server(token=TOKEN)
    client = bulk.BulkClient(TOKEN)
    value = np.arange(MiB, dtype=np.int64)
    timer = threading.Timer(0.3, server.engine.put_tensor, (5, "later", value))
    timer.start()
    try:
        got, _ = client.fetch(server.target[7:], server._bulk.port, 5, "later", 10)
        with pytest.raises(errors.DeadlineExceededError):
            client.fetch(server.target[7:], server._bulk.port, 6, "never", 0.2)
    finally:
        timer.join()
        client.close()
    np.testing.assert_array_equal(got, value)


def test_an_unreachable_bulk_port_falls_back_to_the_grpc_stream(make_server):
    server = make_server(token=TOKEN)
    value = np.arange(MiB, dtype=np.float32)
    reply = _left_to_stream(server, 1, value)
    closed_port = free_ports(1)[0]
    client = ClusterClient(TOKEN)
    try:
        worker = client.worker(server.target)
        got, _ = worker._pull(pb.RecvTensorRequest(
            step_id=1, rendezvous_key=reply.stream_key, timeout_s=10), closed_port)
    finally:
        client.close()
    np.testing.assert_array_equal(got, value)
    assert server._bulk.sent == 0


def test_with_tls_a_large_tensor_streams_encrypted_and_no_bulk_port_listens(make_server,
                                                                           tmp_path):
    from test_auth import _self_signed

    from tfteach.distributed.transport import security
    cert, key = _self_signed(tmp_path)
    server = make_server(tls=security.TLSConfig(cert=cert, key=key), token=TOKEN)
    client = ClusterClient(TOKEN, tls=security.TLSConfig(ca=cert))
    value = np.arange(MiB, dtype=np.float32)
    server.engine.put_tensor(1, "k", value)
    try:
        got, _ = client.worker(server.target).recv_tensor(1, "k", timeout=10, use_shm=False)
    finally:
        client.close()
    np.testing.assert_array_equal(got, value)
    assert server._bulk is None and client.bulk is None


PS_ELSEWHERE = """
import sys
from tfteach.distributed.local import server_cli as cli; from tfteach.distributed.transport import shm
shm._host_key = "elsewhere/x/1"     # this task takes itself for another host's
sys.exit(cli.main(["--ps_hosts", sys.argv[1], "--worker_hosts", sys.argv[2],
                   "--job", "ps", "--task", "0"]))
"""


def test_a_large_fetch_from_a_task_on_another_host_leaves_on_its_bulk_port(monkeypatch):
    """The ps (a process that takes itself for another host's) answers the master's
    RunGraph with the 4 MiB variable's stream key and bulk port; the master takes it
    there, and the step's values are exact."""
    import tfteach as tf
    from tfteach.distributed.service.grpc_server import Server
    monkeypatch.setenv("TFTEACH_CLUSTER_TOKEN", TOKEN)
    ps_port, worker_port = free_ports(2)
    ps_address, worker_address = f"localhost:{ps_port}", f"localhost:{worker_port}"
    ps = subprocess.Popen([sys.executable, "-c", PS_ELSEWHERE, ps_address, worker_address],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    server = Server({"ps": [ps_address], "worker": [worker_address]}, "worker", 0)
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(tf.range(MiB, dtype=tf.float32), name="v")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(v * 2.0)  # the _Recv feeds an op: pulled, not answered
            with tf.Session(server.target) as sess:
                sess.run(v.initializer)
                bulk_before = _bulk_connections(server)
                got = sess.run(v)
                assert _bulk_connections(server) == bulk_before + 1
                totals = [sess.run(total) for _ in range(2)]    # the second asks at once
                assert server._client.bulk.port_of(ps_address)
    finally:
        server.stop()
        ps.terminate()
        ps.wait(timeout=30)
    np.testing.assert_array_equal(got, np.arange(MiB, dtype=np.float32))
    assert totals == [(2 * np.arange(MiB, dtype=np.float32)).sum(dtype=np.float32)] * 2


def test_a_tensor_the_last_answer_streamed_is_asked_for_before_the_call(monkeypatch):
    """The master asks the ps's bulk port for a fetch that the last step's answer left
    there before its RunGraph call: the values stay exact when the fetch shrinks (sent there
    once more, then inline again) or the step fails (the request is dropped, the next step
    runs)."""
    import tfteach as tf
    from tfteach.distributed.service.grpc_server import Server
    monkeypatch.setenv("TFTEACH_CLUSTER_TOKEN", TOKEN)
    from tfteach.distributed.client.stubs import WorkerClient
    asks = []
    ask_early = WorkerClient._ask_early
    monkeypatch.setattr(WorkerClient, "_ask_early", lambda self, *a: asks.extend(
        ask_early(self, *a).items()) or dict(asks))
    ps_port, worker_port = free_ports(2)
    ps_address, worker_address = f"localhost:{ps_port}", f"localhost:{worker_port}"
    ps = subprocess.Popen([sys.executable, "-c", PS_ELSEWHERE, ps_address, worker_address],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    server = Server({"ps": [ps_address], "worker": [worker_address]}, "worker", 0)
    sizes, got, asked = [MiB, MiB, 3, MiB, -2, MiB], [], []
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                n = tf.placeholder(tf.int32, [])
                ones = tf.fill(tf.reshape(n, [1]), 2.0)
            with tf.Session(server.target) as sess:
                for size in sizes:
                    del asks[:]
                    try:
                        got.append(sess.run(ones, {n: size}))
                    except errors.OpError:      # a negative size: the step fails
                        got.append(None)
                    asked.append(len(asks))
    finally:
        server.stop()
        ps.terminate()
        ps.wait(timeout=30)
    assert asked == [0, 1, 1, 0, 1, 1]   # the first step learns the port; 3 floats: inline
    assert got[4] is None
    for size, value in zip(sizes, got):
        if size > 0:
            np.testing.assert_array_equal(value, np.full([size], 2.0, np.float32))


def _bulk_connections(server):
    """The bulk connections the server's client keeps (one per task it took from)."""
    idle = server._client.bulk._idle
    return sum(len(kept) for kept in idle.values())


def test_tfteach_server_names_its_bulk_port_which_listens(tmp_path):
    import os
    import re
    ps, = free_ports(1)
    env = dict(os.environ, TFTEACH_CLUSTER_TOKEN=TOKEN)
    proc = subprocess.Popen([sys.executable, "-m", "tfteach.server", f"--ps_hosts=localhost:{ps}",
                             "--job_name=ps", "--task_index=0"], env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stderr.readline() for _ in range(2)]
        port = int(re.search(r"leave on TCP port (\d+)", lines[1]).group(1))
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    finally:
        proc.terminate()
        proc.wait(30)
    assert f"Started server with target: grpc://localhost:{ps}" in lines[0]


def test_tfteach_bulk_0_turns_the_bulk_port_off(make_server, monkeypatch):
    monkeypatch.setenv("TFTEACH_BULK", "0")
    server = make_server(token=TOKEN)
    value = np.arange(MiB, dtype=np.float32)
    server.engine.put_tensor(1, "k", value)
    client = ClusterClient(TOKEN)
    try:
        got, _ = client.worker(server.target).recv_tensor(1, "k", timeout=10, use_shm=False)
    finally:
        client.close()
    np.testing.assert_array_equal(got, value)
    assert server.bulk_port == 0 and not client.bulk.port_of(server.target[7:])


@pytest.mark.parametrize("garbage", [b"GET / HTTP/1.1\r\n\r\n", bulk.MAGIC + b"\xff" * 8,
                                     bulk.MAGIC + struct.pack("!I", 2) + b"xx"],
                         ids=["http", "huge-length", "short-payload"])
def test_a_garbled_hello_is_closed_and_the_port_still_serves(make_server, garbage):
    server = make_server(token=TOKEN)
    sock = socket.create_connection(("127.0.0.1", server.bulk_port), timeout=5)
    try:
        sock.sendall(garbage)
        assert sock.recv(16) == b""
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    reply = _left_to_stream(server, 1, np.ones(MiB, np.uint8))
    client = bulk.BulkClient(TOKEN)
    try:
        got, _ = client.fetch(server.target[7:], server.bulk_port, 1, reply.stream_key, 10)
    finally:
        client.close()
    assert got.sum() == MiB
