"""A large tensor on the bulk port leaves in parts over several connections and arrives
intact, also where the task refuses a part's connection; a connection that dies in the
middle of a part ends the fetch with UnavailableError naming the task, never a hang."""
import socket
import struct
import threading
import time

import numpy as np
import pytest
from dist_helpers import read_exactly

from tfteach import errors
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.transport import bulk, bulk_parts

TOKEN = "bulk-parts-token"
MiB = 1 << 20


@pytest.mark.parametrize("nbytes,parts", [(4 * MiB, 3), (10 * 4096 + 3, 4), (5, 2)])
def test_the_parts_tile_the_tensor_from_page_aligned_starts(nbytes, parts):
    spans = [bulk_parts.bounds(nbytes, parts, i) for i in range(parts)]
    assert spans[0][0] == 0 and spans[-1][1] == nbytes
    assert all(a[1] == b[0] for a, b in zip(spans[:-1], spans[1:], strict=True))
    assert all(start % 4096 == 0 and start <= end for start, end in spans)


@pytest.mark.parametrize("max_connections", [bulk.MAX_CONNECTIONS, 1],
                         ids=["own-connections", "refused-so-on-the-first"])
def test_a_tensor_in_parts_arrives_intact(make_server, monkeypatch, max_connections):
    monkeypatch.setattr(bulk_parts, "PART_BYTES", MiB)
    monkeypatch.setattr(bulk_parts, "OFFERED", 3)
    monkeypatch.setattr(bulk, "MAX_CONNECTIONS", max_connections)
    server = make_server(token=TOKEN)
    client = bulk.BulkClient(TOKEN)
    value = np.random.default_rng(1).standard_normal((3 * MiB + 12) // 4, np.float32)
    try:
        for step in (1, 2):     # the second on kept connections
            server.engine.put_tensor(step, "big", value * step)
            got, is_dead = client.fetch(server.target[7:], server.bulk_port, step, "big",
                                        10)
            np.testing.assert_array_equal(got, value * step)
            assert not is_dead
        # parts on connections of their own (a part may reuse one whose part has arrived)
        assert (len(server._bulk._served) > 1) == (max_connections > 1)
    finally:
        client.close()
    assert _until(lambda: server._bulk.parts_sent == 6)     # counted once each send ended
    assert server._bulk._transfers.held() == 0


def _request(sock: socket.socket) -> tuple[int, bytes]:
    kind_length = struct.unpack("!I", read_exactly(sock, 4))[0]
    return kind_length >> 24, read_exactly(sock, kind_length & 0xFFFFFF)


def _dying_task(listener: socket.socket, dies_in: str, nbytes: int) -> None:
    """A bulk port that answers a request in 2 parts and closes a connection halfway
    through part 0 (``first``) or part 1 (``part``)."""
    half = nbytes // 2
    first, _ = listener.accept()
    with first:
        length = struct.unpack("!I", read_exactly(first, 8)[4:])[0]
        read_exactly(first, length)                          # HELLO
        assert _request(first)[0] == 1                   # in parts, please
        head = pb.TensorHeader(dtype="<f4", shape=[nbytes // 4],
                               nbytes=nbytes).SerializeToString()
        first.sendall(struct.pack("!BI", 2, len(head)) + head + struct.pack("!BQ", 2, 7))
        if dies_in == "first":
            first.sendall(b"\1" * (half // 2))
            return
        first.sendall(b"\1" * half)
        second, _ = listener.accept()
        with second:
            length = struct.unpack("!I", read_exactly(second, 8)[4:])[0]
            read_exactly(second, length)
            kind, payload = _request(second)
            assert kind == 2 and struct.unpack("!QB", payload) == (7, 1)
            second.sendall(struct.pack("!BI", 3, half) + b"\2" * (half // 2))


@pytest.mark.parametrize("dies_in", ["first", "part"])
def test_a_connection_dying_mid_transfer_is_unavailable_naming_the_task(monkeypatch,
                                                                        dies_in):
    monkeypatch.setattr(bulk, "HELLO_TIMEOUT_S", 1.0)   # a hang would end in 3 s, not 12
    listener = socket.create_server(("127.0.0.1", 0))
    task = threading.Thread(target=_dying_task, args=(listener, dies_in, 2 * MiB))
    task.start()
    client = bulk.BulkClient(TOKEN)
    try:
        with pytest.raises(errors.UnavailableError, match=r"127\.0\.0\.1:2222 \(bulk port "
                           rf"{listener.getsockname()[1]}\) while receiving tensor 'k'"):
            client.fetch("127.0.0.1:2222", listener.getsockname()[1], 1, "k", 2.0)
    finally:
        client.close()
        task.join(5)
        listener.close()
    assert not task.is_alive()


def _until(condition, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_receiver_that_leaves_after_part_0_frees_the_held_tensor(make_server,
                                                                   monkeypatch):
    monkeypatch.setattr(bulk_parts, "PART_BYTES", MiB)
    server = make_server(token=TOKEN)
    server.engine.put_tensor(1, "big", np.ones(MiB, np.float32))     # 4 MiB
    token, port = TOKEN.encode(), int(server.target.rsplit(":", 1)[1])
    request = pb.RecvTensorRequest(step_id=1, rendezvous_key="big",
                                   timeout_s=5).SerializeToString()
    with socket.create_connection(("127.0.0.1", server.bulk_port), timeout=5) as sock:
        sock.sendall(bulk.MAGIC + struct.pack("!II", 4 + len(token), port) + token +
                     struct.pack("!IB", 1 << 24 | len(request) + 1, 2) + request)
        kind, length = struct.unpack("!BI", read_exactly(sock, 5))
        read_exactly(sock, length)
        parts, _ = struct.unpack("!BQ", read_exactly(sock, 9))
        assert (kind, parts) == (2, 2)
        read_exactly(sock, bulk_parts.bounds(4 * MiB, 2, 0)[1])
        assert _until(lambda: server._bulk.parts_sent == 1)
        assert server._bulk._transfers.held() == 1          # part 1 not asked for yet
    assert _until(lambda: server._bulk._transfers.held() == 0)
