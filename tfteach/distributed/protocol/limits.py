"""How much of a task one caller may hold: RPC threads, long-lived streams, waits, bytes.

A task serves every call on one pool of ``MAX_WORKERS`` threads (gRPC Python's sync
server), and a call holds its thread until it ends. So that idle or slow callers can never
take all of them (and GetStatus, RunStep... always find a free thread):

- Streams: at most ``MAX_STREAMS`` RunStepStream/RunGraphStream streams are open at once
  (``StreamSlots``); one more is refused with ResourceExhaustedError marked ``BUSY_KEY``
  before any request is read, and the client sends its call as a unary call instead
  (a unary call holds no thread while its client is idle). A stream idle for more than
  ``STREAM_IDLE_S`` is cancelled by the task; clients reuse a kept stream only while it
  has been idle for less than ``CLIENT_STREAM_IDLE_S`` (half of it), so they never send
  on a stream being cancelled.
- Waits: at most ``MAX_WAITS`` RecvTensorInline/RecvTensor calls wait at once for a
  tensor not yet sent (``WaitSlots``); one more is refused the same way (a tensor already
  there is answered without a slot) and the client asks again after a short pause.
- Bytes: a task reads messages of at most ``max_message_bytes()`` (env
  ``TFTEACH_MAX_MESSAGE_BYTES``, or ``Server(max_message_bytes=...)``; default 1 GiB:
  a graph's constants travel inside CreateSession, and TF's own limit on a GraphDef is
  2 GB); a larger one is refused by gRPC with RESOURCE_EXHAUSTED before the call runs.
  Callers without the token never get this far (see ``security``).
- Connections: keepalive pings find dead peers (their calls end and free their threads);
  a connection with no call for ``CONNECTION_IDLE_MS`` is closed.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any, Iterator

import grpc

from tfteach import errors
from tfteach.i18n import tr

MAX_WORKERS = 64
MAX_STREAMS = MAX_WORKERS // 2
MAX_WAITS = MAX_WORKERS // 4
MAX_CONCURRENT_RPCS = 4 * MAX_WORKERS   # running + queued calls; more are refused at once
STREAM_IDLE_S = 60.0
CLIENT_STREAM_IDLE_S = STREAM_IDLE_S / 2
MAX_MESSAGE_ENV = "TFTEACH_MAX_MESSAGE_BYTES"
DEFAULT_MAX_MESSAGE_BYTES = 1 << 30
CONNECTION_IDLE_MS = 5 * 60 * 1000
BUSY_KEY = "tfteach-busy"       # trailing metadata: refused before it ran; send it again
_WATCH_PERIOD_S = 1.0


def max_message_bytes(value: int | None = None) -> int:
    """The largest message a task reads: ``value``, else ``TFTEACH_MAX_MESSAGE_BYTES``,
    else 1 GiB."""
    if value is None:
        text = os.environ.get(MAX_MESSAGE_ENV, "").strip()
        try:
            value = int(text) if text else DEFAULT_MAX_MESSAGE_BYTES
        except ValueError:
            raise errors.InvalidArgumentError(
                f"{MAX_MESSAGE_ENV}={text!r} is not a number of bytes",
                hint=tr("Set {variable} to an integer such as {example}.",
                        variable=MAX_MESSAGE_ENV, example=DEFAULT_MAX_MESSAGE_BYTES)
            ) from None
    if not 0 < value < 1 << 31:
        raise errors.InvalidArgumentError(
            f"The largest message a task reads must be 1 byte to 2 GiB, not {value}",
            hint=tr("gRPC cannot read a message of 2 GiB or more."))
    return value


def server_options(message_bytes: int) -> tuple[tuple[str, Any], ...]:
    """gRPC server options: message cap, HTTP/2 stream cap, keepalive and idle limits."""
    return (
        ("grpc.max_send_message_length", -1),
        ("grpc.max_receive_message_length", message_bytes),
        ("grpc.max_concurrent_streams", 4 * MAX_CONCURRENT_RPCS),   # per connection
        ("grpc.keepalive_time_ms", 60_000),         # ping a silent peer every minute...
        ("grpc.keepalive_timeout_ms", 20_000),      # ... and drop it if it never answers
        ("grpc.http2.max_pings_without_data", 0),   # keep pinging under idle streams
        ("grpc.max_connection_idle_ms", CONNECTION_IDLE_MS),
        ("grpc.so_reuseport", 0),   # a second server on a busy port must fail, not share it
    )


def busy(what: str, limit: int, hint: str) -> errors.ResourceExhaustedError:
    """The error that refuses a call over a limit before it ran (marked ``BUSY_KEY``)."""
    err = errors.ResourceExhaustedError(f"{what}: this task already holds {limit}", hint=hint)
    err.rpc_metadata = ((BUSY_KEY, "1"),)
    return err


def is_busy(rpc_error: Any) -> bool:
    """Whether a failed call was refused by a limit before it ran (safe to send again)."""
    metadata = rpc_error.trailing_metadata() if hasattr(rpc_error, "trailing_metadata") else ()
    return any(key == BUSY_KEY for key, _ in metadata or ())


class WaitSlots:
    """At most ``limit`` calls waiting at once (``hold()`` raises ``busy`` beyond it)."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = MAX_WAITS if limit is None else limit
        self._slots = threading.BoundedSemaphore(self._limit)

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        if not self._slots.acquire(blocking=False):
            raise busy("Too many calls waiting for tensors", self._limit,
                       tr("The receiver asks again shortly; many pending receives usually "
                          "mean a sending task is slow, stuck or dead."))
        try:
            yield
        finally:
            self._slots.release()


class StreamSlots:
    """At most ``limit`` open streams; a watcher thread (running only while some stream
    is open) cancels a stream idle for more than ``idle_s``."""

    def __init__(self, limit: int | None = None, idle_s: float | None = None) -> None:
        self._limit = MAX_STREAMS if limit is None else limit
        self._idle_s = STREAM_IDLE_S if idle_s is None else idle_s
        self._idle_since: dict[Any, float | None] = {}    # context -> None while busy
        self._lock = threading.Lock()
        self._watching = False

    def serve(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        """``requests`` of one stream, while it holds a slot (``busy`` if none is free)."""
        self._open(context)
        try:
            for request in requests:        # the stream is idle while this waits
                self._mark(context, None)
                yield request
                self._mark(context, time.monotonic())
        finally:
            with self._lock:
                self._idle_since.pop(context, None)

    def _mark(self, context: grpc.ServicerContext, idle_since: float | None) -> None:
        with self._lock:
            self._idle_since[context] = idle_since

    def _open(self, context: grpc.ServicerContext) -> None:
        with self._lock:
            if len(self._idle_since) >= self._limit:
                raise busy("Too many open streams of calls", self._limit,
                           tr("The client sends its calls one by one instead; nothing to "
                              "do."))
            self._idle_since[context] = time.monotonic()
            start, self._watching = not self._watching, True
        if start:
            threading.Thread(target=self._watch, name="tfteach-idle-streams",
                             daemon=True).start()

    def _watch(self) -> None:
        while True:
            time.sleep(min(_WATCH_PERIOD_S, self._idle_s / 4))
            now = time.monotonic()
            with self._lock:
                if not self._idle_since:
                    self._watching = False
                    return
                stale = [c for c, since in self._idle_since.items()
                         if since is not None and now - since > self._idle_s]
                for context in stale:
                    self._idle_since[context] = None     # cancelled once
            for context in stale:
                context.cancel()
