"""A task's side of the same-host lane (``lane``): ``LaneServer`` and ``serve``.

The task's MasterServicer and WorkerServicer serve the lane's streams with their own
stream methods (``RunStepStream``, ``RunGraphStream``), given a ``LaneContext`` for the
gRPC context, so errors (TF's classes and hints), stream limits (``limits.StreamSlots``,
shared with gRPC's streams), shared memory and cancellation behave as on gRPC.

Trust, as on gRPC: only processes of this server's uid may connect (SO_PEERCRED, checked
at accept); the hello must carry the cluster token (``security.token_allows``), be at most
``lane.HELLO_MAX_BYTES`` and arrive within ``HELLO_TIMEOUT_S``. Until then the one
listening thread holds the connection (at most ``MAX_PENDING`` such; one more is refused
busy, ``limits.BUSY_KEY``, so its client sends the call on gRPC), never a thread of its
own; out of descriptors, it rests ``ACCEPT_PAUSE_S`` before accepting again. A request
larger than ``limits.max_message_bytes()`` is refused with ResourceExhaustedError before
it is read, and a request is read as its bytes arrive. A stream whose client reads nothing
of an answer for ``SEND_TIMEOUT_S`` is ended (its slot and thread freed). While a request
is served, the listening thread watches its connection: a client that goes away (Ctrl-C,
kill -9) cancels the call, as on gRPC, and so does one that sends bytes before its answer
(a request pipelined behind it would hide its death). State: a ``LaneServer`` per server (its pending
connections and open streams, guarded by its lock).
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import selectors
import socket
import struct
import threading
import time
from typing import Any, Callable, Iterator

import grpc

from tfteach import errors
from tfteach.distributed.protocol import limits, status
from tfteach.distributed.transport import security, shm_callers
from tfteach.distributed.transport.lane import (
    ANSWER,
    ERROR,
    HEADER,
    HELLO,
    HELLO_MAX_BYTES,
    REQUEST,
    enabled,
    read_header,
    recv_exact,
)

HELLO_TIMEOUT_S = 2.0
MAX_PENDING = 64
SEND_TIMEOUT_S = 30.0   # an answer its client has not read by then ends the stream
_SEND_SLICE_S = 0.5
ACCEPT_PAUSE_S = 0.25   # out of descriptors: the listener rests this long before accepting
_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
_SO_PEERCRED = struct.Struct("3i")      # pid, uid, gid


class _Aborted(Exception):
    """``LaneContext.abort``: ends the stream with a status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code, self.details = code, details


class LaneContext:
    """What the servicer methods use of a ``grpc.ServicerContext``, for one lane stream."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.shm_caller = shm_callers.Caller.trusting(pid)     # SO_PEERCRED's pid
        self.trailing: tuple = ()
        self.watches = 0        # requests watched so far (``LaneServer._watch``)
        self._callbacks: list[Callable[[], Any]] = []
        self._active = True
        self._lock = threading.Lock()

    def peer(self) -> str:
        return f"unix:pid={self.pid}"

    def add_callback(self, callback: Callable[[], Any]) -> bool:
        with self._lock:
            if self._active:
                self._callbacks.append(callback)
            return self._active

    def is_active(self) -> bool:
        return self._active

    def cancel(self) -> None:
        """End the stream (an idle one, ``limits.StreamSlots``): its next read sees EOF."""
        self.end()
        try:
            self.conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def set_trailing_metadata(self, metadata: tuple) -> None:
        self.trailing = tuple(metadata)

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise _Aborted(code, details)

    def end(self) -> None:
        """The stream ended, or its client went away: run the callbacks once."""
        with self._lock:
            self._active, callbacks, self._callbacks = False, self._callbacks, []
        for callback in callbacks:
            callback()


class LaneServer:
    """A task's lane: one listening thread, and a thread per authenticated stream, which
    runs ``methods[name](requests, context)`` (a servicer's stream method)."""

    def __init__(self, methods: dict[str, Callable[..., Iterator[Any]]], token: str | None,
                 max_message_bytes: int, task_name: str) -> None:
        self.name = f"tfteach-lane-{os.getpid()}-{secrets.token_hex(8)}"
        self._methods = methods
        self._task_name = task_name
        self._token = token or ""
        self._max_bytes = max_message_bytes
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind("\0" + self.name)
        self._listener.listen(128)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, self._accept)
        self._wake, self._waker = socket.socketpair()
        self._selector.register(self._wake, selectors.EVENT_READ, lambda: None)
        self._pending: dict[socket.socket, tuple[float, bytearray]] = {}
        self._streams: set[LaneContext] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._accept_at: float | None = None    # paused until then (out of descriptors)
        self._thread = threading.Thread(target=self._loop, name="tfteach-lane", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"LaneServer({self.name!r}, streams={len(self._streams)})"

    def stop(self) -> None:
        """Stop listening and end every stream (their running calls are the engine's to
        abort)."""
        with self._lock:
            self._closed, streams = True, list(self._streams)
        for context in streams:
            context.cancel()
        try:
            self._waker.send(b"\0")
        except OSError:
            pass
        self._thread.join(5.0)

    # -- the listening thread
    def _loop(self) -> None:
        try:
            while not self._closed:
                for key, _ in self._selector.select(self._next_timeout()):
                    key.data()
                self._expire_pending()
                self._resume_accepting()
        finally:
            with self._lock:
                pending, self._pending = list(self._pending), {}
            for conn in pending:
                conn.close()
            self._selector.close()
            for sock in (self._listener, self._wake, self._waker):
                sock.close()

    def _next_timeout(self) -> float | None:
        """Until the first pending hello is late (None: no wake-up while none is pending)."""
        with self._lock:
            soonest = min([deadline for deadline, _ in self._pending.values()] +
                          ([self._accept_at] if self._accept_at else []), default=None)
        return None if soonest is None else max(0.0, soonest - time.monotonic())

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError as exc:  # none left (BlockingIOError), or out of descriptors
                if exc.errno in _OUT_OF_DESCRIPTORS:    # rest: it stays readable meanwhile
                    self._selector.unregister(self._listener)
                    self._accept_at = time.monotonic() + ACCEPT_PAUSE_S
                return
            pid, uid, _ = _SO_PEERCRED.unpack(conn.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, _SO_PEERCRED.size))
            if uid != os.geteuid() or self._closed:
                conn.close()
                continue
            if len(self._pending) >= MAX_PENDING:   # busy: the client sends it on gRPC
                _refuse(conn, grpc.StatusCode.RESOURCE_EXHAUSTED, "Too many lane connections "
                        f"waiting for their hello: this task already holds {MAX_PENDING}",
                        ((limits.BUSY_KEY, "1"),))
                continue
            conn.setblocking(False)
            with self._lock:
                self._pending[conn] = (time.monotonic() + HELLO_TIMEOUT_S, bytearray())
            self._selector.register(conn, selectors.EVENT_READ,
                                    lambda c=conn, p=pid: self._read_hello(c, p))

    def _resume_accepting(self) -> None:
        if self._accept_at is not None and time.monotonic() >= self._accept_at:
            self._accept_at = None
            self._selector.register(self._listener, selectors.EVENT_READ, self._accept)

    def _expire_pending(self) -> None:
        now = time.monotonic()
        with self._lock:
            late = [c for c, (deadline, _) in self._pending.items() if deadline <= now]
        for conn in late:
            self._drop_pending(conn)

    def _drop_pending(self, conn: socket.socket) -> None:
        with self._lock:
            self._pending.pop(conn, None)
        self._selector.unregister(conn)
        conn.close()

    def _read_hello(self, conn: socket.socket, pid: int) -> None:
        pending = self._pending.get(conn)
        if pending is None:     # dropped in this same turn of the loop
            return
        buffer = pending[1]
        header = HEADER.unpack_from(buffer) if len(buffer) >= HEADER.size else None
        wanted = HEADER.size if header is None else HEADER.size + header[1]
        try:        # never past the hello: the first request may follow it at once
            data = conn.recv(wanted - len(buffer))
        except BlockingIOError:
            return
        except OSError:
            data = b""
        buffer += data
        header = HEADER.unpack_from(buffer) if len(buffer) >= HEADER.size else None
        if not data or (header and (header[0] != HELLO or header[1] > HELLO_MAX_BYTES)):
            return self._drop_pending(conn)
        if header is None or len(buffer) < HEADER.size + header[1]:
            return
        method, _, token = bytes(buffer[HEADER.size:]).partition(b"\0")
        with self._lock:
            self._pending.pop(conn, None)
        self._selector.unregister(conn)
        name = method.decode("ascii", "replace")
        if not security.token_allows(self._token, token):
            return _refuse(conn, grpc.StatusCode.UNAUTHENTICATED,
                           f"missing or wrong cluster token for task {self._task_name}")
        if name not in self._methods:
            return _refuse(conn, grpc.StatusCode.UNIMPLEMENTED,
                           f"Method {name!r} is not served on task {self._task_name}'s lane")
        conn.setblocking(True)
        context = LaneContext(conn, pid)
        with self._lock:
            if self._closed:
                return conn.close()
            self._streams.add(context)
        threading.Thread(target=self._serve, args=(name, context), daemon=True,
                         name=f"tfteach-lane-{name}").start()

    def _watch(self, context: LaneContext) -> None:
        """While a request of ``context``'s stream is served, its connection is watched: EOF
        means the client went away (``_check_gone``)."""
        context.watches += 1
        watch = context.watches
        self._selector.register(context.conn, selectors.EVENT_READ,
                                lambda: self._check_gone(context, watch))

    def _unwatch(self, context: LaneContext) -> None:
        try:
            self._selector.unregister(context.conn)
        except (KeyError, ValueError):  # not watched, or closed
            pass

    def _check_gone(self, context: LaneContext, watch: int) -> None:
        """EOF: the client went away. Bytes before its answer break the lane's protocol (one
        request at a time, as ``LaneStream`` sends them) and hide a later EOF behind them
        (a client that pipelined a request and died), so they end the call too."""
        if watch != context.watches:    # an event of an earlier request's watch
            return
        try:
            context.conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            pass
        self._unwatch(context)
        context.end()

    # -- a stream's thread
    def _serve(self, name: str, context: LaneContext) -> None:
        conn = context.conn
        try:
            for response in self._methods[name](self._requests(context), context):
                self._unwatch(context)
                _send_within(conn, ANSWER, response.SerializeToString(), SEND_TIMEOUT_S)
                conn.setblocking(True)
        except _Aborted as aborted:
            self._unwatch(context)
            _refuse(conn, aborted.code, aborted.details, context.trailing)
        except OSError:         # the client went away while we answered
            pass
        finally:
            self._unwatch(context)
            context.end()
            with self._lock:
                self._streams.discard(context)
            conn.close()

    def _requests(self, context: LaneContext) -> Iterator[bytes]:
        """The stream's requests, until its client closes it (or the server ends it)."""
        while True:
            header = read_header(context.conn)
            if header is None or not context.is_active():
                return
            kind, length = header
            if kind != REQUEST:
                raise errors.InvalidArgumentError(
                    f"Received a lane frame of kind {kind} where a request belongs",
                    hint=status.malformed_hint())
            if length > self._max_bytes:
                raise errors.ResourceExhaustedError(
                    f"Received message larger than max ({length} vs. {self._max_bytes})",
                    hint=status.message_size_hint())
            payload = recv_exact(context.conn, length)
            if payload is None:
                return
            self._watch(context)
            yield payload


def serve(servicers: tuple, token: str | None, max_message_bytes: int,
          task_name: str) -> LaneServer | None:
    """A lane for the streams of ``servicers`` (a task's MasterServicer and
    WorkerServicer), named in their answers; None when lanes are off or it cannot listen."""
    if not enabled():
        return None
    methods = {"RunStepStream": servicers[0].RunStepStream,
               "RunGraphStream": servicers[1].RunGraphStream}
    try:
        server = LaneServer(methods, token, max_message_bytes, task_name)
    except OSError:
        return None
    for servicer in servicers:
        servicer.lane = server.name
    return server


def _refuse(conn: socket.socket, code: grpc.StatusCode, details: str,
            trailing: tuple = ()) -> None:
    """Answer ERROR (the stream's end) and close; a client already gone is not told."""
    body = json.dumps({"code": code.value[0], "details": details,
                       "metadata": [[k, v.decode("latin-1") if isinstance(v, bytes) else v,
                                     isinstance(v, bytes)] for k, v in trailing]})
    try:
        _send_within(conn, ERROR, body.encode("utf-8"), 1.0)
    except OSError:
        pass
    conn.close()


def _send_within(conn: socket.socket, kind: int, payload: bytes, timeout: float) -> None:
    """``send_frame``, but TimeoutError (which ends the stream) once the client has read
    nothing of it for ``timeout`` s: a client that never reads holds no thread for long."""
    deadline = time.monotonic() + timeout
    conn.settimeout(min(timeout, _SEND_SLICE_S))
    header = HEADER.pack(kind, len(payload))
    for part in (header + payload,) if len(payload) < 65536 else (header, payload):
        view = memoryview(part)
        while view:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the client read no answer for {timeout:g} s")
            try:
                view = view[conn.send(view):]
            except TimeoutError:
                continue
            deadline = time.monotonic() + timeout
