"""``tf.train.QueueRunner``: threads that keep running enqueue ops until told to stop.

A runner holds a queue, its enqueue ops (one thread each), a close op (run when the last
thread sees the queue closed: OutOfRangeError) and a cancel op (run when the coordinator
stops, to wake threads blocked in the queue). Any other error stops the coordinator with it
(an error that comes after the stop, such as the cancellation, is ignored there). ``start_queue_runners`` starts every runner of the
``QUEUE_RUNNERS`` collection. SyncReplicasOptimizer's chief runner is one of these.

State: ``_runs_per_session`` (threads still running per session) and
``exceptions_raised``. Invariant: a thread ends on coordinator stop, on the queue closed
(OutOfRangeError/CancelledError), or by reporting its error to the coordinator. Runner
threads use the session they were given (local or ``grpc://``: both run concurrent steps).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from typing import Any

from tfteach import errors
from tfteach.framework.graph import GraphKeys, get_default_graph

_log = logging.getLogger("tfteach.train")
CANCEL_REPEATS = 50
CANCEL_PERIOD_S = 0.2


class QueueRunner:
    """Runs ``enqueue_ops`` in threads (one per op) for ``queue``."""

    def __init__(self, queue: Any = None, enqueue_ops: Sequence[Any] | None = None,
                 close_op: Any = None, cancel_op: Any = None,
                 queue_closed_exception_types: Sequence[type] | None = None) -> None:
        if queue is None or not enqueue_ops:
            raise ValueError("Queue and enqueue_ops must be provided.")
        self._queue = queue
        self._enqueue_ops = list(enqueue_ops)
        self._close_op = close_op if close_op is not None else queue.close()
        self._cancel_op = cancel_op if cancel_op is not None else \
            queue.close(cancel_pending_enqueues=True)
        self._queue_closed_exception_types = tuple(
            queue_closed_exception_types or (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._runs_per_session: dict[int, int] = {}
        self._exceptions_raised: list[BaseException] = []

    queue = property(lambda self: self._queue)
    enqueue_ops = property(lambda self: list(self._enqueue_ops))
    close_op = property(lambda self: self._close_op)
    cancel_op = property(lambda self: self._cancel_op)
    exceptions_raised = property(lambda self: list(self._exceptions_raised))
    name = property(lambda self: self._queue.name)

    def create_threads(self, sess: Any, coord: Any = None, daemon: bool = False,
                       start: bool = False) -> list[threading.Thread]:
        """One thread per enqueue op (plus one that cancels on coordinator stop)."""
        with self._lock:
            if self._runs_per_session.get(id(sess), 0) > 0:
                return []          # already running for this session
            self._runs_per_session[id(sess)] = len(self._enqueue_ops)
            self._exceptions_raised = []
        runners = [threading.Thread(target=self._run, args=(sess, op, coord), daemon=daemon,
                                    name=f"QueueRunnerThread-{self.name}-{op.name}")
                   for op in self._enqueue_ops]
        threads = list(runners)
        if coord is not None:
            threads.append(threading.Thread(target=self._close_on_stop,
                                            args=(sess, coord, runners), daemon=daemon,
                                            name=f"QueueRunnerCancel-{self.name}"))
        for t in threads:
            if coord is not None:
                coord.register_thread(t)
            if start:
                t.start()
        return threads

    def _run(self, sess: Any, enqueue_op: Any, coord: Any) -> None:
        try:
            while not (coord is not None and coord.should_stop()):
                sess.run(enqueue_op)
        except self._queue_closed_exception_types:
            self._last_thread_closes(sess)
        except Exception as e:
            if coord is None:
                _log.error("Exception in QueueRunner: %s", e)
                with self._lock:
                    self._exceptions_raised.append(e)
                raise
            coord.request_stop(e)
        finally:
            with self._lock:
                left = self._runs_per_session.get(id(sess), 1) - 1
                self._runs_per_session[id(sess)] = max(0, left)

    def _last_thread_closes(self, sess: Any) -> None:
        with self._lock:
            last = self._runs_per_session.get(id(sess), 1) <= 1
        if last:
            _quietly(sess.run, self._close_op)

    def _close_on_stop(self, sess: Any, coord: Any, runners: list) -> None:
        """After a stop, run the cancel op until the runner threads are gone (a thread may
        start one more blocking step just as the stop comes)."""
        coord.wait_for_stop()
        for _ in range(CANCEL_REPEATS):
            _quietly(sess.run, self._cancel_op)
            if not any(t.is_alive() for t in runners):
                return
            time.sleep(CANCEL_PERIOD_S)


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 (TF ignores errors of close/cancel ops)
        _log.debug("Ignored exception: %s", e)


def add_queue_runner(qr: QueueRunner, collection: str = GraphKeys.QUEUE_RUNNERS) -> None:
    get_default_graph().add_to_collection(collection, qr)


def start_queue_runners(sess: Any = None, coord: Any = None, daemon: bool = True,
                        start: bool = True,
                        collection: str = GraphKeys.QUEUE_RUNNERS) -> list[threading.Thread]:
    """Start the threads of every QueueRunner in ``collection`` of the session's graph."""
    if sess is None:
        from tfteach.runtime.session import get_default_session
        sess = get_default_session()
        if sess is None:
            raise ValueError("Cannot start queue runners: No default session is registered. "
                             "Use `with sess.as_default()` or pass an explicit session to "
                             "tf.start_queue_runners(sess=sess)")
    threads = []
    for qr in sess.graph.get_collection(collection):
        threads.extend(qr.create_threads(sess, coord=coord, daemon=daemon, start=start))
    return threads
