"""Bulk transfers: large tensors between hosts over a plain TCP connection, beside gRPC.

gRPC Python copies a tensor about five times on its way (message bytes, slices, parsing);
a socket copies none in Python: the sender writes the array's memory, the receiver reads
straight into the preallocated array (``recv_into``), a buffer of ``recv_buffers`` reused
once nothing refers to it. Both ends keep their sockets blocking, with kernel timeouts
(``_wait_at_most``): a tensor leaves in one ``send`` and arrives in one ``recv_into``
(``MSG_WAITALL``), with no return to Python between its pieces, where a thread of a busy
process would wait for the GIL after each one. A task without TLS listens on a port
of its own (``BulkServer``, chosen by the system, on the host of its gRPC address) and
names it (``bulk_port``) where it leaves a tensor to stream: a RecvTensorInline answer with
a ``stream_key``, or a RunGraph answer's header with one. The receiver (``BulkClient``)
then takes the tensor there; where it cannot connect (a firewall: that port is not tried
again), or with TLS, the tensor streams through gRPC's RecvTensor as before.
``TFTEACH_BULK=0`` turns the bulk port off (no listener, every tensor on gRPC).

Once a client knows a task's bulk port (``learn``), it asks there at once for the
tensors of ``MIN_BYTES`` or more that it pulls from that task (``port_of``), and the task
answers when the tensor is sent (one round trip, where RecvTensorInline then a stream took
two).

Protocol, per connection: HELLO (``MAGIC``, u32 length, then the task's gRPC port as the
client knows it, u32, and the cluster token): a task that is not that port's (it restarted
and another took its bulk port) or a wrong token gets the connection closed. Then requests
(u32 length, a ``RecvTensorRequest``), each answered by a kind byte and u32 length: 0 and a
``TensorHeader`` followed by the content's bytes, or 1 and ``ErrorClass: message``. A
connection closed before any answer was read means the request was not taken: the client
asks through gRPC instead. A connection that has not said HELLO within ``HELLO_TIMEOUT_S``
is closed on the listening thread and gets no thread (``MAX_CONNECTIONS`` at most, each
with a thread of its own once authenticated, which waits for the tensors it is asked for).
Connections idle for ``IDLE_S`` are closed; clients reuse one only while idle for less
than half of that.
"""
from __future__ import annotations

import hmac
import os
import selectors
import socket
import struct
import threading
import time
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.transport import recv_buffers, security, wire
from tfteach.i18n import tr

MAGIC = b"TFTB"
HELLO_TIMEOUT_S = 10.0
IDLE_S = 60.0
CONNECT_TIMEOUT_S = 1.0
BULK_ENV = "TFTEACH_BULK"
MAX_CONNECTIONS = 32
MIN_BYTES = 256 << 10       # smaller tensors travel inside gRPC messages
_MAX_HELLO = 4096
MAX_WAIT_S = 3600.0         # the longest a request waits for its tensor
_MAX_REQUEST = 1 << 16
_U32 = struct.Struct("!I")
_ANSWER = struct.Struct("!BI")
_WAITALL = getattr(socket, "MSG_WAITALL", 0)


class Unreachable(Exception):
    """The task's bulk port could not be reached: stream through gRPC instead."""


def serve(engine: Any, host: str, token: str | None, tls: Any,
          grpc_port: int) -> "BulkServer | None":
    """The ``BulkServer`` on ``host`` of the task served on ``grpc_port``; None with TLS
    (its tensors stream on gRPC, encrypted) or where no port can be bound there."""
    if tls is not None or os.environ.get(BULK_ENV, "1").strip() == "0":
        return None
    try:
        return BulkServer(engine, host, token, grpc_port)
    except OSError:
        return None


def _read_exact(sock: socket.socket, nbytes: int) -> bytes:
    data = bytearray(nbytes)
    _read_into(sock, memoryview(data))
    return bytes(data)


def _read_into(sock: socket.socket, view: memoryview) -> None:
    got = 0
    while got < len(view):
        try:
            n = sock.recv_into(view[got:], len(view) - got, _WAITALL)
        except BlockingIOError:     # SO_RCVTIMEO passed with nothing received
            raise TimeoutError("timed out") from None
        if not n:
            raise ConnectionError("connection closed")
        got += n


def _wait_at_most(sock: socket.socket, seconds: float) -> None:
    """Make ``sock`` blocking, each wait of a send or receive ending after ``seconds``
    (SO_SNDTIMEO, SO_RCVTIMEO). A blocking socket takes a whole tensor in one ``recv_into``
    (``MSG_WAITALL``) and sends it in one ``send``: the kernel waits for the pieces, with no
    return to Python (and no GIL to take back) between them, where a socket with a Python
    timeout returns after each piece that arrived."""
    sock.settimeout(None)
    seconds = min(max(seconds, 0.001), MAX_WAIT_S + HELLO_TIMEOUT_S)
    whole = int(seconds)
    timeval = struct.pack("ll", whole, int((seconds - whole) * 1e6))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)


class BulkServer:
    """A task's bulk listener: one thread reads HELLOs, one thread per authenticated
    connection serves its requests from ``engine``'s rendezvous."""

    def __init__(self, engine: Any, host: str, token: str | None, grpc_port: int) -> None:
        self._engine = engine
        self._token = (token or "").encode()
        self._grpc_port = grpc_port
        family = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0][0]
        self._listener = socket.create_server((host, 0), family=family)
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self.sent = 0           # tensors answered so far
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._hellos: dict[socket.socket, tuple[float, bytearray]] = {}
        self._served: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False
        threading.Thread(target=self._loop, name="tfteach-bulk", daemon=True).start()

    def stop(self) -> None:
        """Close the listener and every connection (a transfer in flight ends)."""
        with self._lock:
            self._stopped = True
            served, self._served = list(self._served), set()
        for sock in served:     # a thread blocked on it wakes up
            _shut(sock)
            _close(sock)
        _close(self._listener)

    def _loop(self) -> None:
        try:
            while not self._stopped:
                for key, _ in self._selector.select(timeout=1.0):
                    if key.fileobj is self._listener:
                        self._accept()
                    else:
                        self._read_hello(key.fileobj)
                self._drop_slow_hellos()
        except (OSError, ValueError):   # the listener was closed: stopped
            pass
        finally:
            for sock in list(self._hellos):
                self._forget(sock)
            self._selector.close()

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except BlockingIOError:
            return
        if len(self._hellos) + len(self._served) >= MAX_CONNECTIONS:
            _close(sock)
            return
        sock.setblocking(False)
        self._hellos[sock] = (time.monotonic(), bytearray())
        self._selector.register(sock, selectors.EVENT_READ)

    def _read_hello(self, sock: Any) -> None:
        since, data = self._hellos[sock]
        wanted = 8 if len(data) < 8 else 8 + _U32.unpack_from(data, 4)[0]
        try:        # no further: the first request may follow at once
            chunk = sock.recv(max(1, min(wanted - len(data), _MAX_HELLO)))
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        data += chunk
        if not chunk or len(data) > 8 + _MAX_HELLO or data[:4] != MAGIC[:len(data[:4])]:
            self._forget(sock)
            return
        if len(data) >= 8 and not 4 <= _U32.unpack_from(data, 4)[0] <= _MAX_HELLO:
            self._forget(sock)
            return
        if len(data) < 12 or len(data) < 8 + _U32.unpack_from(data, 4)[0]:
            return
        port, token = _U32.unpack_from(data, 8)[0], bytes(data[12:])
        self._selector.unregister(sock)
        del self._hellos[sock]
        if not hmac.compare_digest(token, self._token) or port != self._grpc_port:
            _close(sock)
            return
        sock.setblocking(True)
        with self._lock:
            if self._stopped:
                _close(sock)
                return
            self._served.add(sock)
        threading.Thread(target=self._serve, args=(sock,), name="tfteach-bulk-conn",
                         daemon=True).start()

    def _drop_slow_hellos(self) -> None:
        now = time.monotonic()
        for sock, (since, _) in list(self._hellos.items()):
            if now - since > HELLO_TIMEOUT_S:
                self._forget(sock)

    def _forget(self, sock: Any) -> None:
        self._hellos.pop(sock, None)
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass
        _close(sock)

    def _serve(self, sock: socket.socket) -> None:
        _wait_at_most(sock, IDLE_S)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a tensor's tail at once
        try:
            while True:
                length = _U32.unpack(_read_exact(sock, 4))[0]
                if length > _MAX_REQUEST:
                    return
                self._answer(sock, pb.RecvTensorRequest.FromString(_read_exact(sock, length)))
        except Exception:  # noqa: BLE001 - a closed, idle or garbled connection ends
            pass
        finally:
            with self._lock:
                self._served.discard(sock)
            _close(sock)

    def _answer(self, sock: socket.socket, request: pb.RecvTensorRequest) -> None:
        try:
            value, is_dead = self._engine.recv_tensor(
                request.step_id, request.rendezvous_key,
                min(max(request.timeout_s, 0.0), MAX_WAIT_S))
            header, content = wire.encode(value)
        except Exception as err:  # noqa: BLE001 - every failure is answered
            if not isinstance(err, errors.OpError):
                err = errors.InternalError(f"{type(err).__name__}: {err}")
            text = f"{type(err).__name__}: {err.message}".encode()
            sock.sendall(_ANSWER.pack(1, len(text)) + text)
            return
        header.is_dead = is_dead
        head = header.SerializeToString()
        sock.sendall(_ANSWER.pack(0, len(head)) + head)
        self.sent += 1
        sock.sendall(content)


class BulkClient:
    """A cluster client's bulk connections, idle ones kept per ``(host, port)``."""

    def __init__(self, token: str | None) -> None:
        token_bytes = (token or "").encode()
        self._token = token_bytes
        self._ports: dict[str, int] = {}        # task address -> its bulk port
        self._idle: dict[tuple[str, int], list[tuple[float, socket.socket]]] = {}
        self._unreachable: set[tuple[str, int]] = set()   # never tried again (a firewall)
        self._lock = threading.Lock()
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for socks in idle.values():
            for _, sock in socks:
                _close(sock)

    def learn(self, address: str, port: int) -> None:
        """The task at ``address`` (``host:port`` of its gRPC server) named bulk ``port``."""
        self._ports[address] = port

    def port_of(self, address: str) -> int:
        """The bulk port the task at ``address`` named (0: none known)."""
        return self._ports.get(address, 0)

    def fetch(self, address: str, port: int, step_id: int, key: str,
              timeout: float) -> tuple[np.ndarray, bool]:
        """``(array, is_dead)`` of tensor ``key`` of step ``step_id`` from bulk ``port`` of
        the task at ``address`` (waiting up to ``timeout`` s for it to be sent);
        ``Unreachable`` if the port cannot be reached or refused the request unread (the
        caller asks through gRPC instead)."""
        host, grpc_port = security.split_address(address)
        host = security.bind_host(host)
        where = (host, port)
        sock = self._connection(where, grpc_port)
        request = pb.RecvTensorRequest(step_id=step_id, rendezvous_key=key,
                                       timeout_s=timeout).SerializeToString()
        try:
            _wait_at_most(sock, timeout + HELLO_TIMEOUT_S)
            sock.sendall(_U32.pack(len(request)) + request)
            value = _receive(sock)
        except _Refused:
            _close(sock)
            with self._lock:
                if self._ports.get(address) == port:
                    del self._ports[address]
            raise Unreachable(where) from None
        except TimeoutError:
            _close(sock)
            raise errors.DeadlineExceededError(
                f"Timed out after {timeout:g} s waiting for tensor {key!r} from {address}",
                hint=tr("The task that sends it may be slow, stuck or dead; check that "
                        "every task of the cluster is running.")) from None
        except OSError:
            _close(sock)
            raise errors.UnavailableError(
                f"Lost the connection to {address} (bulk port {port}) while receiving "
                f"tensor {key!r}",
                hint=tr("The sending task stopped, or its host left the network; check "
                        "that every task of the cluster is running.")) from None
        except BaseException:
            _close(sock)
            raise
        with self._lock:
            if self._closed:
                _close(sock)
            else:
                self._idle.setdefault(where, []).append((time.monotonic(), sock))
        return value

    def _connection(self, where: tuple[str, int], grpc_port: int) -> socket.socket:
        with self._lock:
            idle = self._idle.get(where, [])
            while idle:
                since, sock = idle.pop()
                if time.monotonic() - since < IDLE_S / 2:
                    return sock
                _close(sock)
            if where in self._unreachable:
                raise Unreachable(where)
        try:
            sock = socket.create_connection(where, timeout=CONNECT_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(MAGIC + _U32.pack(4 + len(self._token)) + _U32.pack(grpc_port)
                         + self._token)
        except OSError:
            with self._lock:
                self._unreachable.add(where)
            raise Unreachable(where) from None
        return sock


class _Refused(Exception):
    """The task closed the connection before answering: it did not take the request."""


def _receive(sock: socket.socket) -> tuple[np.ndarray, bool]:
    try:
        first = sock.recv(1)
    except ConnectionResetError:
        first = b""
    except BlockingIOError:     # SO_RCVTIMEO passed
        raise TimeoutError("timed out") from None
    if not first:
        raise _Refused()
    kind, length = _ANSWER.unpack(first + _read_exact(sock, _ANSWER.size - 1))
    if length > _MAX_REQUEST:
        raise errors.DataLossError(f"Received a bulk answer header of {length} bytes")
    data = _read_exact(sock, length)
    if kind != 0:
        name, _, message = data.decode("utf-8", "replace").partition(": ")
        raise errors.exception_type_from_name(name)(message)
    header = pb.TensorHeader.FromString(data)
    wire.check_header(header)
    buffer = recv_buffers.take(header.nbytes)
    _read_into(sock, memoryview(buffer))
    return wire.decode(header, buffer), header.is_dead


def _close(sock: socket.socket) -> None:
    try:
        sock.close()
    except OSError:
        pass


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
