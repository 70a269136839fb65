"""Deadlines for calls that travel as messages on a stream (a gRPC stream or a lane): a
stream message has no deadline of its own, as a unary call has, so ``watch`` gives it one.

One watchdog thread per process (``_Watchdog``, daemon, started on first use and again in
a forked child) holds the calls in flight that have a deadline (``_active: {Watch}``, at
most one per stream, guarded by its condition) and sleeps until the soonest one. When a
call's deadline passes first, the watchdog closes its stream: the call waiting on it wakes
with an error, which the caller turns into DeadlineExceededError (``Watch.expired``), and
no late answer can be read from that stream by the next call (a closed stream is never
kept). Invariant: a watch is in ``_active`` from ``watch`` until ``done`` or its expiry.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any


class Watch:
    """One call's deadline on one stream: ``done()`` once answered (or failed);
    ``expired`` says whether the deadline passed first (and its stream was closed)."""

    __slots__ = ("deadline", "stream", "expired", "finished")

    def __init__(self, deadline: float, stream: Any) -> None:
        self.deadline, self.stream = deadline, stream
        self.expired = self.finished = False

    def done(self) -> None:
        """The call ended: its deadline no longer matters."""
        self.finished = True
        _WATCHDOG.forget(self)

    def expire(self) -> None:
        """The deadline passed before the answer: close the stream (from the watchdog)."""
        if not self.finished:
            self.expired = True
            self.stream.close()


class _Watchdog:
    """The thread that expires the watches whose deadline has passed."""

    def __init__(self) -> None:
        self._active: set[Watch] = set()
        self._wake_at = float("inf")    # when the thread wakes next (inf: when told)
        self._condition = threading.Condition()
        self._pid = 0                   # the process whose thread runs (0: none yet)

    def add(self, watch: Watch) -> None:
        with self._condition:
            if self._pid != os.getpid():
                self._start()
            self._active.add(watch)
            if watch.deadline < self._wake_at:
                self._condition.notify()

    def forget(self, watch: Watch) -> None:
        with self._condition:
            self._active.discard(watch)

    def _start(self) -> None:
        self._pid, self._active, self._wake_at = os.getpid(), set(), float("inf")
        threading.Thread(target=self._run, name="tfteach-deadlines", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._condition:
                now = time.monotonic()
                due = [w for w in self._active if w.deadline <= now]
                self._active.difference_update(due)
                self._wake_at = min((w.deadline for w in self._active), default=float("inf"))
                if not due:
                    self._condition.wait(None if self._wake_at == float("inf")
                                         else self._wake_at - now)
            for watch in due:
                watch.expire()


_WATCHDOG = _Watchdog()


def watch(deadline: float | None, stream: Any) -> Watch | None:
    """Close ``stream`` (anything with ``close()``, callable from any thread) if its call
    is still waiting at ``deadline`` (``time.monotonic()``); None when there is none."""
    if deadline is None:
        return None
    found = Watch(deadline, stream)
    _WATCHDOG.add(found)
    return found
