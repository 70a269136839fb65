"""The bulk port's sockets: large receive buffers are reused only once nothing refers to
them, kernel timeouts end a silent peer's wait on either side, and a stopped task's
connections end at once."""
import gc
import socket
import struct
import threading
import weakref

import numpy as np
import pytest
from dist_helpers import read_exactly

from tfteach import errors
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.transport import bulk, recv_buffers

TOKEN = "bulk-sockets-token"
MiB = 1 << 20


def _fetch(server, client, step, value):
    server.engine.put_tensor(step, "big", value)
    got, is_dead = client.fetch(server.target[7:], server.bulk_port, step, "big", 10)
    assert not is_dead
    return got


def test_a_received_tensor_keeps_its_memory_and_a_dropped_one_lends_it_to_the_next(
        make_server):
    server = make_server(token=TOKEN)
    client = bulk.BulkClient(TOKEN)
    first, second = (np.full(4 * MiB, k, np.float32) for k in (1.0, 2.0))   # 16 MiB
    try:
        kept = _fetch(server, client, 1, first)
        other = _fetch(server, client, 2, second)     # while ``kept`` is still used
        assert not np.shares_memory(kept, other)
        np.testing.assert_array_equal(kept, first)
        np.testing.assert_array_equal(other, second)
        buffer = weakref.ref(kept.base)
        del kept
        gc.collect()
        again = _fetch(server, client, 3, first + 5)
    finally:
        client.close()
    assert buffer() is not None and again.base is buffer()     # the dropped one, reused
    np.testing.assert_array_equal(again, first + 5)
    np.testing.assert_array_equal(other, second)


def test_the_pool_hands_out_a_buffer_only_while_nothing_else_refers_to_it():
    pool = recv_buffers.BufferPool(min_bytes=1024, limit_bytes=8192, idle_s=60)
    a = pool.take(2048)
    view = memoryview(a.view(np.float32).reshape(16, 32))
    del a
    b = pool.take(2048)
    assert not np.shares_memory(b, np.asarray(view))    # the memoryview still uses it
    del view
    c = pool.take(2048)
    assert c is not b and pool.take(2048) is not c      # the first one, then a new one
    assert pool.held_bytes() <= 8192
    small = pool.take(512)
    assert small.nbytes == 512 and pool.held_bytes() <= 8192    # below min: not kept


def test_a_peer_that_never_answers_ends_in_deadline_exceeded(monkeypatch):
    monkeypatch.setattr(bulk, "HELLO_TIMEOUT_S", 0.3)
    silent = socket.create_server(("127.0.0.1", 0))
    taken = []
    accepting = threading.Thread(target=lambda: taken.append(silent.accept()[0]))
    accepting.start()
    client = bulk.BulkClient(TOKEN)
    try:
        with pytest.raises(errors.DeadlineExceededError, match="waiting for tensor 'k'"):
            client.fetch("127.0.0.1:1", silent.getsockname()[1], 1, "k", 0.2)
    finally:
        client.close()
        accepting.join(5)
        for sock in [silent, *taken]:
            sock.close()


def _hello(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.bulk_port), timeout=5)
    token, port = TOKEN.encode(), int(server.target.rsplit(":", 1)[1])
    sock.sendall(bulk.MAGIC + struct.pack("!II", 4 + len(token), port) + token)
    return sock


def _ask(sock: socket.socket, server, step: int) -> bytes:
    """One request answered on ``sock`` (the connection is then served, idle)."""
    server.engine.put_tensor(step, "small", np.arange(256, dtype=np.int32))
    request = pb.RecvTensorRequest(step_id=step, rendezvous_key="small",
                                   timeout_s=5).SerializeToString()
    sock.sendall(struct.pack("!I", len(request)) + request)
    kind, length = struct.unpack("!BI", read_exactly(sock, 5))
    header = pb.TensorHeader.FromString(read_exactly(sock, length))
    assert kind == 0
    return read_exactly(sock, header.nbytes)


@pytest.mark.parametrize("ending", ["idle", "stopped"])
def test_a_served_connection_ends_when_idle_for_idle_s_or_at_once_when_the_task_stops(
        make_server, monkeypatch, ending):
    if ending == "idle":
        monkeypatch.setattr(bulk, "IDLE_S", 0.3)
    server = make_server(token=TOKEN)
    sock = _hello(server)
    try:
        assert np.frombuffer(_ask(sock, server, 1), np.int32).sum() == 255 * 256 // 2
        if ending == "stopped":
            server.stop()
        assert sock.recv(1) == b""      # within the 5 s socket timeout (IDLE_S is 60 s)
    finally:
        sock.close()


@pytest.mark.parametrize("first_send", [3, 20, 1000])
def test_a_header_and_content_sent_together_arrive_whole_after_a_partial_send(first_send):
    """One ``sendmsg`` carries an answer's header and content; where the kernel took only
    part of them (in the header, or in the content), the rest follows in order."""
    class PartialFirst:     # a real socket whose first sendmsg sends ``first_send`` bytes
        def __init__(self, sock):
            self.sock, self.calls = sock, 0

        def sendmsg(self, buffers):
            self.calls += 1
            data = b"".join(bytes(b) for b in buffers)[:first_send]
            return self.sock.send(data)

        def sendall(self, data):
            self.sock.sendall(data)
    head = bytes(range(10))
    content = memoryview(np.arange(4096, dtype=np.uint8) * 3 % 251)
    left, right = socket.socketpair()
    right.settimeout(10)    # a missing rest fails, it does not hang
    try:
        partial = PartialFirst(left)
        bulk._send_both(partial, head, content)
        got = read_exactly(right, len(head) + content.nbytes)
    finally:
        left.close()
        right.close()
    assert partial.calls == 1
    assert got == head + content.tobytes()
