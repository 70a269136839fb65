"""What a kernel may hand back besides a value: a ``Pending``, a result that arrives later.

Waiting kernels (queues, accumulators, a Recv from another task) return a ``Pending``
instead of blocking a device thread; the executor (tfteach.runtime) completes the node when
it resolves. It lives in the lowest layer so that ops can make one without importing the
runtime.
"""
from __future__ import annotations

import threading
from typing import Any, Callable


class Pending:
    """A kernel's result that arrives later (queues, accumulators). Resolve exactly once."""

    def __init__(self) -> None:
        self._callbacks: list[Callable] = []
        self._lock = threading.Lock()
        self._result: tuple | None = None
        self.on_cancel: Callable[[], None] | None = None
        self.started_ns: int | None = None

    def resolve(self, value: Any = None, error: BaseException | None = None) -> None:
        with self._lock:
            if self._result is not None:
                return
            self._result = (value, error)
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(value, error)

    def add_done_callback(self, cb: Callable) -> None:
        with self._lock:
            if self._result is None:
                self._callbacks.append(cb)
                return
        cb(*self._result)
