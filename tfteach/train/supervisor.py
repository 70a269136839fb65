"""``tf.train.Supervisor``: the older (TF 1.0-era) way to run distributed training.

At construction it collects or creates the init op, the ready ops, the saver and the global
step, then finalizes the graph. ``managed_session(master)`` / ``prepare_or_wait_for_session``
give the chief a session restored from ``logdir`` (or initialized) and start a thread that
saves a checkpoint every ``save_model_secs``; other workers wait until the chief is ready.
``should_stop()`` / ``request_stop()`` / ``stop()`` go through its Coordinator.
Summaries are not supported: ``summary_op`` is accepted and ignored.

State: the coordinator, the session manager, the ops above, the services' threads.
"""
from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

from tfteach.framework.graph import GraphKeys, get_default_graph
from tfteach.ops import state_ops
from tfteach.ops.control_ops import group
from tfteach.train import saver as saver_mod
from tfteach.train.coordinator import Coordinator
from tfteach.train.monitored_session import (
    LOCAL_INIT_OP,
    READY_FOR_LOCAL_INIT_OP,
    RECOVERY_WAIT_SECS,
    SessionManager,
    _close_quietly,
    report_uninitialized_variables,
)
from tfteach.train.training_util import get_global_step

_log = logging.getLogger("tfteach.train")


class Supervisor:
    """A training helper that checkpoints and recovers (TF 1.x ``tf.train.Supervisor``)."""

    USE_DEFAULT = 0

    def __init__(self, graph: Any = None, ready_op: Any = USE_DEFAULT,
                 ready_for_local_init_op: Any = USE_DEFAULT, is_chief: bool = True,
                 init_op: Any = USE_DEFAULT, init_feed_dict: dict | None = None,
                 local_init_op: Any = USE_DEFAULT, logdir: str | None = None,
                 summary_op: Any = USE_DEFAULT, saver: Any = USE_DEFAULT,
                 global_step: Any = USE_DEFAULT, save_summaries_secs: float = 120,
                 save_model_secs: float = 600, recovery_wait_secs: float = RECOVERY_WAIT_SECS,
                 stop_grace_secs: float = 120, checkpoint_basename: str = "model.ckpt",
                 session_manager: Any = None, summary_writer: Any = USE_DEFAULT,
                 init_fn: Any = None) -> None:
        self._graph = graph or get_default_graph()
        with self._graph.as_default():
            self._init_ops(ready_op, ready_for_local_init_op, init_op, local_init_op)
            self._saver = _first_or(GraphKeys.SAVERS, saver, self._default_saver)
            self._global_step = get_global_step(self._graph) if global_step is \
                self.USE_DEFAULT else global_step
        self._is_chief = is_chief
        self._init_feed_dict = init_feed_dict
        self._init_fn = init_fn
        self._logdir = logdir
        self._save_model_secs = save_model_secs
        self._stop_grace_secs = stop_grace_secs
        self._save_path = os.path.join(logdir, checkpoint_basename) if logdir else None
        self._coord = Coordinator()
        self._started_threads: list[threading.Thread] = []
        self._session_manager = session_manager or SessionManager(
            local_init_op=self._local_init_op, ready_op=self._ready_op,
            ready_for_local_init_op=self._ready_for_local_init_op, graph=self._graph,
            recovery_wait_secs=recovery_wait_secs)
        self._graph.finalize()

    def _init_ops(self, ready_op: Any, ready_for_local: Any, init_op: Any,
                  local_init_op: Any) -> None:
        g = self._graph
        self._ready_op = _first_or(GraphKeys.READY_OP, ready_op, report_uninitialized_variables)
        self._ready_for_local_init_op = _first_or(
            READY_FOR_LOCAL_INIT_OP, ready_for_local, lambda: report_uninitialized_variables(
                g.get_collection(GraphKeys.GLOBAL_VARIABLES)))
        self._init_op = _first_or(GraphKeys.INIT_OP, init_op,
                                  state_ops.global_variables_initializer)
        self._local_init_op = _first_or(LOCAL_INIT_OP, local_init_op,
                                        lambda: group(state_ops.local_variables_initializer()))

    def _default_saver(self) -> Any:
        if not self._graph.get_collection(GraphKeys.GLOBAL_VARIABLES):
            return None
        return saver_mod.Saver()

    # ---- properties -------------------------------------------------------------------------
    is_chief = property(lambda self: self._is_chief)
    coord = property(lambda self: self._coord)
    session_manager = property(lambda self: self._session_manager)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    saver = property(lambda self: self._saver)
    global_step = property(lambda self: self._global_step)
    save_path = property(lambda self: self._save_path)
    save_model_secs = property(lambda self: self._save_model_secs)
    summary_op = property(lambda self: None)
    summary_writer = property(lambda self: None)

    # ---- sessions -----------------------------------------------------------------------------
    def prepare_or_wait_for_session(self, master: str = "", config: Any = None,
                                    wait_for_checkpoint: bool = False,
                                    max_wait_secs: float = 7200,
                                    start_standard_services: bool = True) -> Any:
        """Chief: restore or initialize, start the checkpoint thread. Others: wait."""
        self._coord.clear_stop()
        if self._is_chief:
            sess = self._session_manager.prepare_session(
                master, init_op=self._init_op, saver=self._saver, checkpoint_dir=self._logdir,
                wait_for_checkpoint=wait_for_checkpoint, max_wait_secs=max_wait_secs,
                config=config, init_feed_dict=self._init_feed_dict, init_fn=self._init_fn)
            if start_standard_services:
                self.start_standard_services(sess)
        else:
            sess = self._session_manager.wait_for_session(master, config=config,
                                                          max_wait_secs=max_wait_secs)
        if start_standard_services:
            self.start_queue_runners(sess)
        return sess

    @contextlib.contextmanager
    def managed_session(self, master: str = "", config: Any = None,
                        start_standard_services: bool = True,
                        close_summary_writer: bool = True) -> Iterator[Any]:
        """``with sv.managed_session(server.target) as sess:`` — stops and closes at the end."""
        sess = None
        try:
            sess = self.prepare_or_wait_for_session(
                master=master, config=config, start_standard_services=start_standard_services)
            yield sess
        except Exception as e:  # noqa: BLE001 (re-raised by stop(), as TF does)
            self.request_stop(e)
        finally:
            try:
                self.stop()
            finally:
                if sess is not None:
                    _close_quietly(sess)

    def start_standard_services(self, sess: Any) -> list[threading.Thread]:
        """The chief's checkpoint thread (every ``save_model_secs``)."""
        if not self._is_chief:
            raise RuntimeError("Only chief supervisor can start standard services. Because "
                               "only chief supervisors can write events.")
        threads = []
        if self._logdir and self._saver is not None and self._save_model_secs:
            threads.append(self.loop(self._save_model_secs, self._save_checkpoint, args=(sess,)))
        return threads

    def _save_checkpoint(self, sess: Any) -> None:
        self._saver.save(sess, self._save_path, global_step=self._global_step)

    def start_queue_runners(self, sess: Any, queue_runners: list | None = None) -> list:
        runners = queue_runners if queue_runners is not None else \
            self._graph.get_collection(GraphKeys.QUEUE_RUNNERS)
        threads = []
        for qr in runners:
            threads.extend(qr.create_threads(sess, coord=self._coord, daemon=True, start=True))
        return threads

    def loop(self, timer_interval_secs: float, target: Any, args: tuple = (),
             kwargs: dict | None = None) -> threading.Thread:
        """Call ``target(*args)`` every ``timer_interval_secs`` until the supervisor stops."""
        def run() -> None:
            with self._coord.stop_on_exception():
                while not self._coord.wait_for_stop(timer_interval_secs):
                    target(*args, **(kwargs or {}))
        thread = threading.Thread(target=run, daemon=True, name="SupervisorLoop")
        self._coord.register_thread(thread)
        thread.start()
        self._started_threads.append(thread)
        return thread

    # ---- stopping -----------------------------------------------------------------------------
    def should_stop(self) -> bool:
        return self._coord.should_stop()

    def request_stop(self, ex: Any = None) -> None:
        self._coord.request_stop(ex=ex)

    def stop(self, threads: list | None = None, close_summary_writer: bool = True,
             ignore_live_threads: bool = False) -> None:
        """Stop every thread, wait for them (grace period) and re-raise a thread's error."""
        self._coord.request_stop()
        try:
            self._coord.join(threads, stop_grace_period_secs=self._stop_grace_secs,
                             ignore_live_threads=ignore_live_threads)
        finally:
            self._started_threads = []

    def stop_on_exception(self) -> Any:
        return self._coord.stop_on_exception()

    def wait_for_stop(self) -> None:
        self._coord.wait_for_stop()

    def summary_computed(self, sess: Any, summary: Any, global_step: Any = None) -> None:
        """Summaries are not supported by tfteach; this does nothing."""


def _first_or(key: str, given: Any, make: Any) -> Any:
    """TF's rule: USE_DEFAULT takes the collection's first item or makes one; None is None."""
    if given is not Supervisor.USE_DEFAULT:
        return given
    found = get_default_graph().get_collection(key)
    if found:
        return found[0]
    value = make()
    if value is not None:
        get_default_graph().add_to_collection(key, value)
    return value

