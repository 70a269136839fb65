"""The same-host lane: RunStep and RunGraph streams over a Unix socket instead of gRPC;
its frames and its client side (``LaneStream``).

Between two processes of one host, a message on a gRPC stream costs about 0.4 ms per
round trip in gRPC Python (each side hands it between threads); on a Unix socket it costs
about 0.05 ms. So every task also listens on an abstract Unix socket (Linux: a name, no
file, so nothing is left behind by kill -9; ``lane_server``) and names it in its GetStatus
and CreateSession answers (``lane``). A client on the same host (the answer's shm host key
is its own) sends its RunStep and RunGraph streams there (``LaneStream``, which
``client.route.TaskRoute`` hands out), and falls back to gRPC when it cannot
connect. Errors come back as a ``LaneError``, a ``grpc.RpcError`` with the code, details
and trailing metadata that the same call on gRPC would have, so ``status.error_from_rpc``
and ``limits.is_busy`` treat both alike. A call with a deadline goes here too (the
client closes the stream if the deadline passes first). Traced steps' RecvTensor and
every other method stay on gRPC.

Frames: ``kind`` (1 byte), ``length`` (4 bytes, little-endian), then the payload. The
client opens with HELLO (the method's name, NUL, the cluster token); each REQUEST (a
serialized request) is answered with ANSWER (the serialized response) or ERROR (JSON:
status code, details, trailing metadata), which ends the stream. A client waits on its
socket in slices of ``WAIT_SLICE_S``, so Ctrl-C is handled at once; closing the stream
then tells the task, which cancels the call. ``TFTEACH_LANE=0`` turns lanes off.

Why not ZeroMQ (measured with a pyzmq port of this module, ``ipc://`` in a 0700 folder):
libzmq's ipc listener aborts the whole process when ``accept`` fails with "Too many open
files" (libzmq 4.3.5, ``ipc_listener.cpp``), so any local user who holds a task's
descriptors could kill it; it also needs 3 descriptors per stream on each side instead of
1, and its small steps with an in-process master were 1.3–1.8 times the lane's.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time
from typing import Any

import grpc

from tfteach.distributed.protocol import status
from tfteach.distributed.transport import shm

LANE_ENV = "TFTEACH_LANE"
HELLO, REQUEST, ANSWER, ERROR = 1, 2, 3, 4
HEADER = struct.Struct("<BI")
HELLO_MAX_BYTES = 1024
RECV_CHUNK_BYTES = 1 << 20     # a frame's first read; its buffer grows from there
CONNECT_TIMEOUT_S = 1.0     # a lane that takes no connection: the client uses gRPC
WAIT_SLICE_S = 0.2      # a client's waits on its socket: Ctrl-C is handled between them


def enabled() -> bool:
    """Whether this process uses lanes: Linux (abstract sockets), shared memory, and
    ``TFTEACH_LANE`` not ``0``."""
    return sys.platform.startswith("linux") and shm.available() and \
        os.environ.get(LANE_ENV, "1").strip() != "0"


def usable(name: str, host_key: str) -> bool:
    """Whether a task that answered ``lane=name`` and ``shm_host=host_key`` is reachable
    on its lane from this process."""
    return bool(name) and enabled() and host_key == shm.host_key()


# ---- frames ---------------------------------------------------------------------------------
def send_frame(sock: socket.socket, kind: int, payload: bytes) -> None:
    """One frame (a large payload is not copied into the header's buffer)."""
    header = HEADER.pack(kind, len(payload))
    if len(payload) < 65536:
        _send_all(sock, header + payload)
    else:
        _send_all(sock, header)
        _send_all(sock, payload)


def _send_all(sock: socket.socket, data: bytes) -> None:
    """``sock.sendall``, in slices of the socket's timeout (a client's: ``WAIT_SLICE_S``)
    so that a signal (Ctrl-C) is handled while it waits."""
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view):]
        except TimeoutError:
            continue


def recv_exact(sock: socket.socket, n: int) -> bytearray | None:
    """``n`` bytes from ``sock``, read into one buffer (parsed from there, not copied);
    None when the peer closed it (or it failed) first. A client's socket waits in slices
    of ``WAIT_SLICE_S``, so Ctrl-C is handled at once. The buffer grows as bytes arrive
    (at most doubling): a length announced but never sent costs no memory."""
    buffer, got = bytearray(min(n, RECV_CHUNK_BYTES)), 0
    while got < n:
        if got == len(buffer):
            buffer += bytes(min(n - got, got))
        try:
            with memoryview(buffer) as view:
                more = sock.recv_into(view[got:], len(buffer) - got)
        except TimeoutError:
            continue
        except OSError:
            return None
        if not more:
            return None
        got += more
    return buffer


def read_header(sock: socket.socket) -> tuple[int, int] | None:
    header = recv_exact(sock, HEADER.size)
    return None if header is None else HEADER.unpack(header)


# ---- the client side -----------------------------------------------------------------------
class LaneError(grpc.RpcError):
    """A lane stream's failure, as the ``grpc.RpcError`` of a failed call (code, details,
    trailing metadata), so ``status.error_from_rpc`` turns it into the same OpError."""

    def __init__(self, code: grpc.StatusCode, details: str, trailing: tuple = ()) -> None:
        super().__init__(details)
        self._code, self._details, self._trailing = code, details, trailing

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple:
        return self._trailing

    @classmethod
    def from_payload(cls, payload: bytes) -> "LaneError":
        body = json.loads(payload)
        trailing = tuple((k, v.encode("latin-1") if raw else v)
                         for k, v, raw in body.get("metadata", ()))
        return cls(status.status_code(body["code"]), body["details"], trailing)


class LaneStream:
    """One stream of calls of ``method`` to a task's lane (the interface of
    ``client._CallStream``): each request is answered before the next is sent."""

    def __init__(self, name: str, method: str, token: str | None,
                 response_class: Any) -> None:
        """Connect and say hello; OSError if the lane cannot be reached, also when its
        backlog is full (a task that takes no connection: never waits past
        ``CONNECT_TIMEOUT_S``)."""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(CONNECT_TIMEOUT_S)
            self._sock.connect("\0" + name)
            self._sock.settimeout(WAIT_SLICE_S)
            send_frame(self._sock, HELLO, method.encode("ascii") + b"\0" +
                       (token or "").encode("utf-8"))
        except OSError:
            self._sock.close()
            raise
        self._response_class = response_class
        self._broken = False
        self._pid = os.getpid()     # a forked child must not share the parent's stream
        self.idle_since = time.monotonic()

    def __repr__(self) -> str:
        return f"LaneStream(broken={self._broken})"

    def idle_s(self) -> float:
        return time.monotonic() - self.idle_since

    def call(self, request: Any) -> Any:
        try:
            send_frame(self._sock, REQUEST, request.SerializeToString())
        except OSError:     # the task refused it, or is gone: its answer, if any, says
            pass
        header = read_header(self._sock)
        payload = None if header is None else recv_exact(self._sock, header[1])
        if header is None or payload is None:
            self._broken = True
            raise LaneError(grpc.StatusCode.UNAVAILABLE, "Socket closed (the task's lane)")
        if header[0] == ERROR:
            self._broken = True
            raise LaneError.from_payload(payload)
        return self._response_class.FromString(payload)

    def open(self) -> bool:
        """Whether the stream can take another call (the task has not closed it)."""
        if self._broken or self._pid != os.getpid():
            return False
        self._sock.setblocking(False)       # (a socket with a timeout polls first)
        try:
            return self._sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            self._sock.settimeout(WAIT_SLICE_S)

    def close(self) -> None:
        """End the stream, from any thread: a call waiting on it wakes at once with a
        LaneError, and the task cancels the call it was running."""
        self._broken = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:     # never connected, or closed already
            pass
        self._sock.close()
