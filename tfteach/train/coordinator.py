"""``tf.train.Coordinator``: lets a set of threads stop together, and reports why.

State: a stop event, the first exception a thread reported (``request_stop(ex)``), the
registered threads, and whether ``join`` ran. Invariants: only the first exception is kept;
exceptions of ``clean_stop_exception_types`` (OutOfRangeError: "end of input") stop the
threads without being an error; after ``join`` the coordinator refuses new exceptions.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from tfteach import errors


class Coordinator:
    """A coordinator for threads (TF 1.x)."""

    def __init__(self, clean_stop_exception_types: Iterable[type] | None = None) -> None:
        self._clean_stop = tuple(clean_stop_exception_types
                                 if clean_stop_exception_types is not None
                                 else (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._stop_event = threading.Event()
        self._exc_info_to_raise: tuple | None = None
        self._joined = False
        self._registered_threads: set[threading.Thread] = set()

    def _filter_exception(self, ex: Any) -> Any:
        if isinstance(ex, tuple):
            ex2 = ex[1]
        else:
            ex2 = ex
        if isinstance(ex2, self._clean_stop):
            return None
        return ex

    def request_stop(self, ex: Any = None) -> None:
        """Ask every thread to stop; ``ex`` (an exception or exc_info) is re-raised by join."""
        with self._lock:
            ex = self._filter_exception(ex)
            if self._joined:
                if isinstance(ex, tuple):
                    raise ex[1].with_traceback(ex[2])
                if ex is not None:
                    raise ex
                return
            if not self._stop_event.is_set():
                if ex is not None and self._exc_info_to_raise is None:
                    self._exc_info_to_raise = ex if isinstance(ex, tuple) else \
                        (type(ex), ex, ex.__traceback__)
                self._stop_event.set()

    def clear_stop(self) -> None:
        with self._lock:
            self._joined = False
            self._exc_info_to_raise = None
            self._stop_event.clear()

    def should_stop(self) -> bool:
        return self._stop_event.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self) -> Iterator[None]:
        """``with coord.stop_on_exception():`` reports any exception to the coordinator."""
        try:
            yield
        except BaseException:  # noqa: BLE001 (reported, as TF does)
            self.request_stop(ex=sys.exc_info())

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        return self._stop_event.wait(timeout)

    def register_thread(self, thread: threading.Thread) -> None:
        with self._lock:
            self._registered_threads.add(thread)

    def join(self, threads: Iterable[threading.Thread] | None = None,
             stop_grace_period_secs: float = 120, ignore_live_threads: bool = False) -> None:
        """Wait for the threads to end; after a stop, wait at most the grace period.

        Raises the exception passed to ``request_stop``, or RuntimeError when threads are
        still running after the grace period (unless ``ignore_live_threads``).
        """
        with self._lock:
            threads = set(self._registered_threads) | set(threads or ())
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.monotonic() + stop_grace_period_secs
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(0.01)
        with self._lock:
            self._joined = True
            self._registered_threads = set()
            exc_info = self._exc_info_to_raise
        if exc_info is not None:
            raise exc_info[1].with_traceback(exc_info[2])
        stragglers = [t.name for t in threads if t.is_alive()]
        if stragglers and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: "
                               f"{' '.join(stragglers)}")

    @property
    def joined(self) -> bool:
        return self._joined

    def raise_requested_exception(self) -> None:
        """Raise the exception a thread reported, if any (used by monitored sessions)."""
        with self._lock:
            exc_info = self._exc_info_to_raise
        if exc_info is not None:
            raise exc_info[1].with_traceback(exc_info[2])
