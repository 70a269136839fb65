"""Receive buffers for large tensors, reused once nothing refers to them any more.

A fresh buffer of tens of megabytes costs the receiver a page fault and a zeroed page for
every page the network then writes (about a tenth of a 64 MB transfer's time between hosts).
``take(nbytes)`` hands out a buffer of ``POOL_MIN_BYTES`` or more from the ones this
process received into before, if one of that size is free: nothing but the pool refers to
it (its reference count, taken under the pool's lock, says so; every view of it, numpy's
or a memoryview, holds a reference). Otherwise it allocates one and keeps it for later.
The pool keeps at most ``POOL_BYTES`` (the oldest go first) and forgets buffers unused for
``IDLE_S``; a forgotten buffer in use lives on as long as its users need it. A received
tensor always overwrites its whole buffer before anyone sees it.
"""
from __future__ import annotations

import sys
import threading
import time

import numpy as np

from tfteach.distributed.transport import wire

POOL_MIN_BYTES = 8 << 20    # smaller buffers come from malloc's own free lists
POOL_BYTES = 128 << 20
IDLE_S = 30.0


def _refcounts(held: list[tuple[np.ndarray, float]]) -> list[int]:
    return [sys.getrefcount(buffer) for buffer, _ in held]


_FREE = _refcounts([(np.empty(0, np.uint8), 0.0)])[0]   # a buffer only the pool holds


class BufferPool:
    """Reusable uint8 buffers (see the module docstring)."""

    def __init__(self, min_bytes: int = POOL_MIN_BYTES, limit_bytes: int = POOL_BYTES,
                 idle_s: float = IDLE_S) -> None:
        self.min_bytes = min_bytes
        self.limit_bytes = limit_bytes
        self.idle_s = idle_s
        self._held: list[tuple[np.ndarray, float]] = []     # (buffer, last handed out)
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 buffer of ``nbytes`` whose old content the caller overwrites."""
        if nbytes < self.min_bytes or nbytes > self.limit_bytes:
            return wire.allocate(nbytes)
        now = time.monotonic()
        with self._lock:
            counts = _refcounts(self._held)
            kept, found = [], None
            for (buffer, since), count in zip(self._held, counts, strict=True):
                if count <= _FREE and found is None and buffer.nbytes == nbytes:
                    found = buffer
                elif count > _FREE or now - since < self.idle_s:
                    kept.append((buffer, since))
            buffer = found if found is not None else wire.allocate(nbytes)
            kept.append((buffer, now))
            self._held = kept
            self._trim()
            return buffer

    def held_bytes(self) -> int:
        """The bytes the pool keeps (in use or free)."""
        with self._lock:
            return sum(buffer.nbytes for buffer, _ in self._held)

    def _trim(self) -> None:
        total = sum(buffer.nbytes for buffer, _ in self._held)
        while total > self.limit_bytes and len(self._held) > 1:
            total -= self._held.pop(0)[0].nbytes


_POOL = BufferPool()


def take(nbytes: int) -> np.ndarray:
    """A buffer of ``nbytes`` from this process's pool (``BufferPool.take``)."""
    return _POOL.take(nbytes)
