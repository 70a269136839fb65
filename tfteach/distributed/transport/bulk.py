"""Bulk transfers: large tensors between hosts over a plain TCP connection, beside gRPC.

gRPC Python copies a tensor about five times on its way (message bytes, slices, parsing);
a socket copies none in Python: the sender writes the array's memory, the receiver reads
straight into the preallocated array (``recv_into``), a buffer of ``recv_buffers`` reused
once nothing refers to it. Both ends keep their sockets blocking, with kernel timeouts
(``_wait_at_most``): a tensor (or each of its parts, ``bulk_parts``: one per connection,
read side by side) leaves in one ``send`` and arrives in one ``recv_into``
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
two). A request may leave before the tensor exists (``ask``, its answer read later by
``take``): a RunGraph caller asks at once for what the graph's last answer left on the port
(``streamed``), so the tensor leaves as soon as the task computed it, while the answer
travels.

Protocol, per connection: HELLO (``MAGIC``, u32 length, then the task's gRPC port as the
client knows it, u32, and the cluster token): a task that is not that port's (it restarted
and another took its bulk port) or a wrong token gets the connection closed. Then requests,
a u32 of the request's kind (top byte) and its length, then: kind 0, a
``RecvTensorRequest``; kind 1, the parts the client takes at most (u8) and a
``RecvTensorRequest``; kind 2, a transfer id (u64) and a part's index (u8). Each is answered
by a kind byte and u32 length: 0 and a ``TensorHeader`` followed by the content's bytes;
1 and ``ErrorClass: message``; 2 and a ``TensorHeader``, the number of parts (u8) and the
transfer id (u64), followed by part 0's bytes (``bulk_parts``: the client asks for the
other parts, kind 2, on other connections); 3 and the bytes of the part asked for. A
connection closed before any answer was read means the request was not taken: the client
asks through gRPC instead (a part: on the first connection, after part 0). A connection
that has not said HELLO within ``HELLO_TIMEOUT_S`` is closed on the listening thread and
gets no thread (``MAX_CONNECTIONS`` at most, each with a thread of its own once
authenticated, which waits for the tensors it is asked for).
Connections idle for ``IDLE_S`` are closed; clients reuse one only while idle for less
than half of that.
"""
from __future__ import annotations

import contextlib
import hmac
import os
import selectors
import socket
import struct
import threading
import time
from typing import Any, Iterator, NamedTuple

import numpy as np

from tfteach import errors
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.transport import bulk_parts, recv_buffers, security, wire
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
_SPLIT = struct.Struct("!BQ")       # parts, transfer id
_PART = struct.Struct("!QB")        # transfer id, part index
_ASK, _ASK_PARTS, _ASK_PART = 0, 1, 2               # request kinds
_WHOLE, _ERROR, _IN_PARTS, _A_PART = 0, 1, 2, 3     # answer kinds
_LENGTH = (1 << 24) - 1
_REMEMBERED = 256           # graphs whose streamed answers a client remembers
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
        self._transfers = bulk_parts.Transfers()
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
            while self._serve_one(sock):
                pass
        except Exception:  # noqa: BLE001 - a closed, idle or garbled connection ends
            pass
        finally:
            with self._lock:
                self._served.discard(sock)
            self._transfers.drop_owned(sock)
            _close(sock)

    def _serve_one(self, sock: socket.socket) -> bool:
        """Read and answer one request; False where the connection must end."""
        word = _U32.unpack(_read_exact(sock, 4))[0]
        kind, length = word >> 24, word & _LENGTH
        if length > _MAX_REQUEST or kind not in (_ASK, _ASK_PARTS, _ASK_PART):
            return False
        payload = _read_exact(sock, length)
        if kind == _ASK_PART:
            self._send_part(sock, *_PART.unpack(payload))
        elif kind == _ASK_PARTS:
            self._answer(sock, pb.RecvTensorRequest.FromString(payload[1:]), payload[0])
        else:
            self._answer(sock, pb.RecvTensorRequest.FromString(payload), 1)
        return True

    def _answer(self, sock: socket.socket, request: pb.RecvTensorRequest,
                offered: int) -> None:
        try:
            value, is_dead = self._engine.recv_tensor(
                request.step_id, request.rendezvous_key,
                min(max(request.timeout_s, 0.0), MAX_WAIT_S))
            header, content = wire.encode(value)
        except Exception as err:  # noqa: BLE001 - every failure is answered
            if not isinstance(err, errors.OpError):
                err = errors.InternalError(f"{type(err).__name__}: {err}")
            _send_error(sock, err)
            return
        header.is_dead = is_dead
        head = header.SerializeToString()
        parts = bulk_parts.count(len(content), offered)
        if parts == 1:
            self.sent += 1
            _send_both(sock, _ANSWER.pack(_WHOLE, len(head)) + head, content)
            return
        transfer = self._transfers.publish(content, parts, sock)
        sock.sendall(_ANSWER.pack(_IN_PARTS, len(head)) + head + _SPLIT.pack(parts, transfer))
        self.sent += 1
        self._send_part(sock, transfer, 0)

    def _send_part(self, sock: socket.socket, transfer: int, index: int) -> None:
        """Part ``index`` of ``transfer``: part 0 follows its header, unframed; the others
        answer their own request (``_A_PART``)."""
        view = self._transfers.part(transfer, index)
        if view is None:
            _send_error(sock, errors.AbortedError(
                f"Part {index} of bulk transfer {transfer:x} is no longer held (its "
                f"sending failed or took over {bulk_parts.HOLD_S:g} s)"))
            return
        ok = False
        try:
            if index:
                sock.sendall(_ANSWER.pack(_A_PART, len(view)))
            sock.sendall(view)
            ok = True
        finally:
            self._transfers.sent(transfer, ok)

    @property
    def parts_sent(self) -> int:
        """Parts of tensors sent in parts so far."""
        return self._transfers.parts_sent


def _send_both(sock: socket.socket, head: bytes, content: memoryview) -> None:
    """``head`` then ``content`` in one ``sendmsg`` (the rest, where it sent part of them,
    with ``sendall``): the receiver wakes once for both, not for a header alone."""
    sent = sock.sendmsg([head, content])
    if sent < len(head):
        sock.sendall(head[sent:])
        sent = len(head)
    if sent - len(head) < content.nbytes:
        sock.sendall(content[sent - len(head):])


def _send_error(sock: socket.socket, err: errors.OpError) -> None:
    text = f"{type(err).__name__}: {err.message}".encode()
    sock.sendall(_ANSWER.pack(_ERROR, len(text)) + text)


class BulkClient:
    """A cluster client's bulk connections, idle ones kept per ``(host, port)``."""

    def __init__(self, token: str | None) -> None:
        token_bytes = (token or "").encode()
        self._token = token_bytes
        self._ports: dict[str, int] = {}        # task address -> its bulk port
        self._idle: dict[tuple[str, int], list[tuple[float, socket.socket]]] = {}
        self._unreachable: set[tuple[str, int]] = set()   # never tried again (a firewall)
        self._streamed: dict[tuple[str, str], tuple[str, ...]] = {}     # ``streamed``
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

    def streamed(self, address: str, handle: str, keys: tuple[str, ...] | None = None
                 ) -> tuple[str, ...]:
        """The stream keys that the last RunGraph answer of graph ``handle`` from the task
        at ``address`` left on its bulk port (``keys``: those of the answer just read,
        remembered for the next step; the latest ``_REMEMBERED`` graphs are kept)."""
        if keys is None:
            return self._streamed.get((address, handle), ())
        with self._lock:
            self._streamed.pop((address, handle), None)
            if keys:
                self._streamed[(address, handle)] = keys
                while len(self._streamed) > _REMEMBERED:
                    del self._streamed[next(iter(self._streamed))]
        return keys

    def port_of(self, address: str) -> int:
        """The bulk port the task at ``address`` named (0: none known)."""
        return self._ports.get(address, 0)

    def fetch(self, address: str, port: int, step_id: int, key: str,
              timeout: float) -> tuple[np.ndarray, bool]:
        """``(array, is_dead)`` of tensor ``key`` of step ``step_id`` from bulk ``port`` of
        the task at ``address`` (waiting up to ``timeout`` s for it to be sent);
        ``Unreachable`` if the port cannot be reached or refused the request unread (the
        caller asks through gRPC instead)."""
        return self.take(self.ask(address, port, step_id, key, timeout))

    def ask(self, address: str, port: int, step_id: int, key: str,
            timeout: float) -> "Asked":
        """Send the request of ``fetch`` and return at once: ``take`` reads the answer
        (a request sent before the tensor exists waits for it on the task), ``drop``
        gives it up. ``Unreachable`` as ``fetch``."""
        host, grpc_port = security.split_address(address)
        where = (security.bind_host(host), port)
        asked = Asked(self._connection(where, grpc_port), address, where, grpc_port, key,
                      timeout)
        request = pb.RecvTensorRequest(step_id=step_id, rendezvous_key=key,
                                       timeout_s=timeout).SerializeToString()
        with self._failures(asked):
            _wait_at_most(asked.sock, timeout + HELLO_TIMEOUT_S)
            asked.sock.sendall(_request(_ASK_PARTS, bytes([bulk_parts.OFFERED]) + request))
        return asked

    def take(self, asked: "Asked") -> tuple[np.ndarray, bool]:
        """The answer to an ``ask``: ``(array, is_dead)``."""
        with self._failures(asked):
            value = self._receive(asked.sock, asked.where, asked.grpc_port, asked.timeout)
        self._release(asked.where, asked.sock, True)
        return value

    @staticmethod
    def drop(asked: "Asked") -> None:
        """Give up an ``ask`` whose answer is not wanted (its connection closes)."""
        _close(asked.sock)

    @contextlib.contextmanager
    def _failures(self, asked: "Asked") -> Iterator[None]:
        """Close ``asked``'s connection on any failure, as errors for the caller."""
        try:
            yield
        except _Refused:
            _close(asked.sock)
            with self._lock:
                if self._ports.get(asked.address) == asked.where[1]:
                    del self._ports[asked.address]
            raise Unreachable(asked.where) from None
        except TimeoutError:
            _close(asked.sock)
            raise errors.DeadlineExceededError(
                f"Timed out after {asked.timeout:g} s waiting for tensor {asked.key!r} "
                f"from {asked.address}",
                hint=tr("The task that sends it may be slow, stuck or dead; check that "
                        "every task of the cluster is running.")) from None
        except OSError:
            _close(asked.sock)
            raise errors.UnavailableError(
                f"Lost the connection to {asked.address} (bulk port {asked.where[1]}) "
                f"while receiving tensor {asked.key!r}",
                hint=tr("The sending task stopped, or its host left the network; check "
                        "that every task of the cluster is running.")) from None
        except BaseException:
            _close(asked.sock)
            raise

    def _release(self, where: tuple[str, int], sock: socket.socket, reuse: bool) -> None:
        """Keep ``sock`` for the next request to ``where`` (``reuse``), or close it."""
        with self._lock:
            if self._closed or not reuse:
                _close(sock)
            else:
                self._idle.setdefault(where, []).append((time.monotonic(), sock))

    def _receive(self, sock: socket.socket, where: tuple[str, int], grpc_port: int,
                 timeout: float) -> tuple[np.ndarray, bool]:
        """The answer to a request on ``sock``: the tensor, read whole or in parts."""
        kind, data = _answer(sock)
        if kind not in (_WHOLE, _IN_PARTS):
            raise errors.DataLossError(f"Received a bulk answer of unknown kind {kind}")
        header = pb.TensorHeader.FromString(data)
        wire.check_header(header)
        parts, transfer = _SPLIT.unpack(_read_exact(sock, _SPLIT.size)) \
            if kind == _IN_PARTS else (1, 0)
        buffer = recv_buffers.take(header.nbytes)
        view = memoryview(buffer)
        if parts == 1:
            _read_into(sock, view)
        else:
            self._read_parts(sock, where, grpc_port, timeout, view, parts, transfer)
        return wire.decode(header, buffer), header.is_dead

    def _read_parts(self, sock: socket.socket, where: tuple[str, int], grpc_port: int,
                    timeout: float, view: memoryview, parts: int, transfer: int) -> None:
        """Part 0 into ``view`` from ``sock``, the others side by side on connections of
        their own, asked for before part 0 is read (on ``sock`` after part 0 where the
        task refused one)."""
        def reader(index: int) -> bulk_parts.PartReader:
            start, end = bulk_parts.bounds(len(view), parts, index)
            return bulk_parts.PartReader(
                view[start:end], self._ask_part(where, grpc_port, timeout, transfer, index),
                _read_part, lambda s, ok: self._release(where, s, ok), (_Refused,))
        readers = [reader(index) for index in range(1, parts)]
        try:
            start, end = bulk_parts.bounds(len(view), parts, 0)
            _read_into(sock, view[start:end])
            for part in readers:
                part.join()
                if part.error is not None:
                    raise part.error
        except BaseException:
            for part in readers:
                part.cancel()
            raise
        for index, part in enumerate(readers, 1):
            if part.refused:
                try:
                    _send_part_request(sock, transfer, index)
                    _read_part(sock, part.view)
                except _Refused:
                    raise ConnectionError("connection closed") from None

    def _ask_part(self, where: tuple[str, int], grpc_port: int, timeout: float,
                  transfer: int, index: int) -> socket.socket | None:
        """A connection on which part ``index`` of ``transfer`` was asked for (None where
        none could be opened or the task closed it)."""
        try:
            sock = self._connection(where, grpc_port, remember=False)
        except Unreachable:
            return None
        try:
            _wait_at_most(sock, timeout + HELLO_TIMEOUT_S)
            _send_part_request(sock, transfer, index)
        except (_Refused, OSError):
            _close(sock)
            return None
        return sock

    def _connection(self, where: tuple[str, int], grpc_port: int,
                    remember: bool = True) -> socket.socket:
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
            if remember:
                with self._lock:
                    self._unreachable.add(where)
            raise Unreachable(where) from None
        return sock


class Asked(NamedTuple):
    """A request sent on a bulk connection (``BulkClient.ask``), its answer not read."""
    sock: socket.socket
    address: str                # the task's gRPC address
    where: tuple[str, int]      # its bulk (host, port)
    grpc_port: int
    key: str
    timeout: float


class _Refused(Exception):
    """The task closed the connection before answering: it did not take the request."""


def _request(kind: int, payload: bytes) -> bytes:
    return _U32.pack(kind << 24 | len(payload)) + payload


def _answer_start(sock: socket.socket) -> tuple[int, int]:
    """An answer's kind and length (``_Refused`` if the connection closed first)."""
    try:
        first = sock.recv(_ANSWER.size, _WAITALL)
    except ConnectionResetError:
        first = b""
    except BlockingIOError:     # SO_RCVTIMEO passed
        raise TimeoutError("timed out") from None
    if not first:
        raise _Refused()
    if len(first) < _ANSWER.size:   # closed (or timed out) within the answer's start
        first += _read_exact(sock, _ANSWER.size - len(first))
    kind, length = _ANSWER.unpack(first)
    if kind == _ERROR:
        name, _, message = _text(sock, length).partition(": ")
        raise errors.exception_type_from_name(name)(message)
    return kind, length


def _answer(sock: socket.socket) -> tuple[int, bytes]:
    """An answer's kind and its header's bytes."""
    kind, length = _answer_start(sock)
    return kind, _header_bytes(sock, length)


def _header_bytes(sock: socket.socket, length: int) -> bytes:
    if length > _MAX_REQUEST:
        raise errors.DataLossError(f"Received a bulk answer header of {length} bytes")
    return _read_exact(sock, length)


def _text(sock: socket.socket, length: int) -> str:
    return _header_bytes(sock, length).decode("utf-8", "replace")


def _send_part_request(sock: socket.socket, transfer: int, index: int) -> None:
    """Ask for part ``index`` of ``transfer`` on ``sock`` (``_Refused`` where the task
    closed the connection before taking the request)."""
    try:
        sock.sendall(_request(_ASK_PART, _PART.pack(transfer, index)))
    except (BrokenPipeError, ConnectionResetError):
        raise _Refused() from None


def _read_part(sock: socket.socket, view: memoryview) -> None:
    """The answer to a part's request on ``sock``, read into ``view``."""
    kind, length = _answer_start(sock)
    if kind != _A_PART or length != len(view):
        raise errors.DataLossError(f"Received a bulk part of {length} bytes (kind {kind}) "
                                   f"where {len(view)} were expected")
    _read_into(sock, view)


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
