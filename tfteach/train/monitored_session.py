"""``tf.train.MonitoredTrainingSession`` and what it is made of (TF 1.x's design).

- ``Scaffold``: the ops a training session needs (init, ready checks, local init, a saver),
  taken from the graph's collections or created, then the graph is finalized.
- ``SessionManager``: the chief *prepares* a session (restore the latest checkpoint, else
  run the init op; then the local init op) and the others *wait* for it: they retry until
  ``ready_for_local_init_op`` (no uninitialized global variable) and ``ready_op`` pass.
- ``MonitoredSession``: layers around a ``tf.Session``: hooks (``_HookedSession``), a
  coordinator for queue-runner threads (``_CoordinatedSession``), and recovery
  (``_RecoverableSession``): when a step fails with AbortedError or UnavailableError (a
  ps or worker was restarted) the session is closed and a new one created, which restores
  the latest checkpoint on the chief, so training continues from it.

State: the hooks, the session creator, the current layered session (None once closed).
Invariants: hooks' ``begin`` runs once, ``after_create_session`` after each (re)creation,
``end`` only on a normal close; ``run`` after ``should_stop()`` is an error.

tfteach note: TF polls every 30 s while a worker waits for the chief or a checkpoint;
tfteach's clusters start in seconds, so it polls every ``RECOVERY_WAIT_SECS``. The chief
restores ``tf.train.latest_checkpoint(checkpoint_dir)``, the newest *complete* checkpoint
the state file lists (TF restores the one the state file names, and fails when a crash
left it incomplete).
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, get_default_graph
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops, state_ops
from tfteach.ops.control_ops import group
from tfteach.ops.data_flow_ops import dynamic_partition
from tfteach.runtime.session import Session
from tfteach.train import saver as saver_mod
from tfteach.train.coordinator import Coordinator
from tfteach.train.hooks import (
    CheckpointSaverHook,
    SessionRunArgs,
    SessionRunContext,
    SessionRunValues,
    StepCounterHook,
)
from tfteach.train.queue_runner import start_queue_runners

_log = logging.getLogger("tfteach.train")
RECOVERY_WAIT_SECS = 0.5
USE_DEFAULT = object()
LOCAL_INIT_OP = "local_init_op"
READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
_PREEMPTION_ERRORS = (errors.AbortedError, errors.UnavailableError)


# ---- readiness --------------------------------------------------------------------------------
def report_uninitialized_variables(var_list: list | None = None,
                                   name: str = "report_uninitialized_variables") -> Any:
    """A 1-D string tensor: the names of the variables in ``var_list`` not initialized yet."""
    g = get_default_graph()
    if var_list is None:
        var_list = g.get_collection(GraphKeys.GLOBAL_VARIABLES) + \
            g.get_collection(GraphKeys.LOCAL_VARIABLES)
    with g.name_scope(name), g.device("/cpu:0"):
        if not var_list:
            return array_ops.constant(np.array([], dtype=object), dtype=dtypes.string)
        initialized = array_ops.stack([state_ops.is_variable_initialized(v) for v in var_list])
        missing = array_ops.cast(math_ops.logical_not(initialized), dtypes.int32)
        names = array_ops.constant(np.array([v.op.name.encode() for v in var_list],
                                            dtype=object), dtype=dtypes.string)
        return dynamic_partition(names, missing, 2)[1]


def _ready(op: Any, sess: Any, msg: str) -> tuple[bool, str | None]:
    """(True, None) when ``op`` reports nothing uninitialized, else (False, why)."""
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            _log.warning("%s Model not ready raised: %s", msg, e)
            raise
        return False, str(e)
    value = np.asarray(value)
    if value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(v.decode() if isinstance(v, bytes) else str(v) for v in value.ravel())
    return False, "Variables not initialized: " + names


# ---- the scaffold ------------------------------------------------------------------------------
class Scaffold:
    """The init, ready, local-init ops and the saver of a training graph."""

    def __init__(self, init_op: Any = None, init_feed_dict: dict | None = None,
                 init_fn: Any = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, local_init_op: Any = None,
                 summary_op: Any = None, saver: Any = None) -> None:
        self._init_op = init_op
        self._init_feed_dict = init_feed_dict
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._local_init_op = local_init_op
        self._summary_op = summary_op
        self._saver = saver

    def finalize(self) -> Scaffold:
        """Create the missing ops (or take them from the collections) and finalize the graph."""
        g = get_default_graph()
        if self._init_op is None:
            self._init_op = _get_or_default(GraphKeys.INIT_OP, state_ops.global_variables_initializer)
        if self._ready_op is None:
            self._ready_op = _get_or_default(GraphKeys.READY_OP, report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = _get_or_default(
                READY_FOR_LOCAL_INIT_OP,
                lambda: report_uninitialized_variables(g.get_collection(GraphKeys.GLOBAL_VARIABLES)))
        if self._local_init_op is None:
            self._local_init_op = _get_or_default(
                LOCAL_INIT_OP, lambda: group(state_ops.local_variables_initializer()))
        if self._saver is None:
            self._saver = _get_or_default(GraphKeys.SAVERS, lambda: saver_mod.Saver(
                allow_empty=True))
        g.finalize()
        return self

    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    init_fn = property(lambda self: self._init_fn)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    @staticmethod
    def get_or_default(arg_name: str, collection_key: str, default_constructor: Any) -> Any:
        return _get_or_default(collection_key, default_constructor)


def _get_or_default(collection_key: str, default_constructor: Any) -> Any:
    g = get_default_graph()
    found = g.get_collection(collection_key)
    if len(found) > 1:
        raise RuntimeError(f"More than one item in collection {collection_key}. Please "
                           "indicate which one to use by passing it to the constructor.")
    if found:
        return found[0]
    op = default_constructor()
    if op is not None:
        g.add_to_collection(collection_key, op)
    return op


# ---- the session manager -----------------------------------------------------------------------
class SessionManager:
    """Creates sessions that are ready to train: restored or initialized (chief), or waited for."""

    def __init__(self, local_init_op: Any = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, graph: Any = None,
                 recovery_wait_secs: float = RECOVERY_WAIT_SECS) -> None:
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph or get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs

    def prepare_session(self, master: str, init_op: Any = None, saver: Any = None,
                        checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config: Any = None, init_feed_dict: dict | None = None,
                        init_fn: Any = None) -> Any:
        """The chief's session: restored from the latest checkpoint, or initialized."""
        sess, restored = self._restore_checkpoint(master, saver, checkpoint_dir,
                                                  checkpoint_filename_with_path,
                                                  wait_for_checkpoint, max_wait_secs, config)
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
        ok, msg = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for local_init.  "
                               f"Init op: {_name(init_op)}, init fn: {init_fn}, error: {msg}")
        ok, msg = _ready(self._ready_op, sess, "Model not ready")
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                               f"{_name(init_op)}, init fn: {init_fn}, local_init_op: "
                               f"{_name(self._local_init_op)}, error: {msg}")
        return sess

    def _restore_checkpoint(self, master: str, saver: Any, checkpoint_dir: str | None,
                            checkpoint_path: str | None, wait: bool, max_wait_secs: float,
                            config: Any) -> tuple[Any, bool]:
        sess = Session(master, graph=self._graph, config=config)
        if checkpoint_dir and checkpoint_path:
            raise ValueError("Can not provide both checkpoint_dir and "
                             "checkpoint_filename_with_path.")
        if not saver or not (checkpoint_dir or checkpoint_path):
            return sess, False
        if checkpoint_path:
            saver.restore(sess, checkpoint_path)
            return sess, True
        waited = 0.0
        path = saver_mod.latest_checkpoint(checkpoint_dir)  # the newest *complete* one
        while path is None:
            if not (wait and waited < max_wait_secs):
                return sess, False
            _log.info("Waiting for checkpoint to be available.")
            time.sleep(self._recovery_wait_secs)
            waited += self._recovery_wait_secs
            path = saver_mod.latest_checkpoint(checkpoint_dir)
        _log.info("Restoring parameters from %s", path)
        saver.restore(sess, path)
        state = saver_mod.get_checkpoint_state(checkpoint_dir)
        saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths) if state else [])
        return sess, True

    def wait_for_session(self, master: str, config: Any = None,
                         max_wait_secs: float | None = float("inf")) -> Any:
        """A non-chief's session, once the chief made the model ready (polls until then)."""
        max_wait_secs = float("inf") if max_wait_secs is None else max_wait_secs
        deadline, reached = time.monotonic() + max_wait_secs, False
        while True:
            sess = None
            try:
                sess = Session(master, graph=self._graph, config=config)
                ok, not_ready_local, not_ready = self._poll_ready(sess)
            except _PREEMPTION_ERRORS as error:
                if not reached:          # tfteach: a cluster never reached fails at once
                    raise
                ok, not_ready_local, not_ready = False, str(error).split("\n")[0], None
            if ok:
                return sess
            reached = reached or not_ready_local is not None or not_ready is not None
            if sess is not None:
                _close_quietly(sess)
            if deadline - time.monotonic() - self._recovery_wait_secs < 0:
                raise errors.DeadlineExceededError(
                    f"Session was not ready after waiting {max_wait_secs:g} secs.",
                    hint=tr("the chief (task 0) initializes the variables; is it running, "
                            "and does it reach the same cluster?"))
            _log.info("Waiting for model to be ready.  Ready_for_local_init_op:  %s, ready: %s",
                      not_ready_local, not_ready)
            time.sleep(self._recovery_wait_secs)

    def _poll_ready(self, sess: Any) -> tuple[bool, str | None, str | None]:
        """One readiness poll: (ready, why not ready for local init, why not ready)."""
        ok, not_ready_local = self._try_run_local_init_op(sess)
        if not ok:
            return False, not_ready_local, None
        ok, not_ready = _ready(self._ready_op, sess, "Model not ready")
        return ok, None, not_ready

    def _try_run_local_init_op(self, sess: Any) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ok, msg = _ready(self._ready_for_local_init_op, sess,
                         "Model not ready for local init")
        if not ok:
            return False, msg
        sess.run(self._local_init_op)
        return True, None


def _name(op: Any) -> str:
    return getattr(op, "name", str(op))


def _close_quietly(sess: Any) -> None:
    try:
        sess.close()
    except Exception as e:  # noqa: BLE001 (closing a session of a dead cluster)
        _log.debug("Ignored error while closing a session: %s", e)


# ---- session creators ------------------------------------------------------------------------
class ChiefSessionCreator:
    """Restores the latest checkpoint of ``checkpoint_dir``, else runs the init op."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 checkpoint_dir: str | None = None,
                 checkpoint_filename_with_path: str | None = None) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self) -> Any:
        s = self._scaffold.finalize()
        manager = SessionManager(local_init_op=s.local_init_op, ready_op=s.ready_op,
                                 ready_for_local_init_op=s.ready_for_local_init_op)
        return manager.prepare_session(
            self._master, saver=s.saver, checkpoint_dir=self._checkpoint_dir,
            checkpoint_filename_with_path=self._checkpoint_filename_with_path,
            config=self._config, init_op=s.init_op, init_feed_dict=s.init_feed_dict,
            init_fn=s.init_fn)


class WorkerSessionCreator:
    """Waits until the chief has made the model ready."""

    def __init__(self, scaffold: Scaffold | None = None, master: str = "", config: Any = None,
                 max_wait_secs: float = 30 * 60) -> None:
        self._scaffold = scaffold or Scaffold()
        self._master, self._config = master, config
        self._max_wait_secs = max_wait_secs

    def create_session(self) -> Any:
        s = self._scaffold.finalize()
        manager = SessionManager(local_init_op=s.local_init_op, ready_op=s.ready_op,
                                 ready_for_local_init_op=s.ready_for_local_init_op)
        return manager.wait_for_session(self._master, config=self._config,
                                        max_wait_secs=self._max_wait_secs)


# ---- the layered monitored session -----------------------------------------------------------
class _HookedSession:
    """Calls the hooks around every run; remembers a stop a hook requested."""

    def __init__(self, sess: Any, hooks: list) -> None:
        self.sess = sess
        self._hooks = hooks
        self.stop_requested = False

    def run(self, fetches: Any, feed_dict: dict | None, options: Any, run_metadata: Any) -> Any:
        if self.stop_requested:
            raise RuntimeError("Run called even after should_stop requested.")
        context = SessionRunContext(SessionRunArgs(fetches, feed_dict), self.sess)
        feeds = dict(feed_dict or {})
        hook_fetches = {}
        for hook in self._hooks:
            args = hook.before_run(context)
            if args is not None:
                hook_fetches[hook] = args.fetches
                _merge_feeds(feeds, args.feed_dict)
        outputs = self.sess.run({"caller": fetches, "hooks": hook_fetches},
                                feed_dict=feeds or None, options=options,
                                run_metadata=run_metadata)
        for hook in self._hooks:
            hook.after_run(context, SessionRunValues(outputs["hooks"].get(hook), options,
                                                     run_metadata))
        self.stop_requested = self.stop_requested or context.stop_requested
        return outputs["caller"]


def _merge_feeds(feeds: dict, extra: dict | None) -> None:
    for key, value in (extra or {}).items():
        if key in feeds:
            raise RuntimeError(f"Same tensor is fed by a SessionRunHook and user. "
                               f"Conflict(s): {[key]}")
        feeds[key] = value


class _CoordinatedSession:
    """A hooked session plus the coordinator of its threads (queue runners)."""

    def __init__(self, hooked: _HookedSession, coord: Coordinator,
                 stop_grace_period_secs: float) -> None:
        self.hooked = hooked
        self.coord = coord
        self._grace = stop_grace_period_secs

    def run(self, *args: Any) -> Any:
        try:
            return self.hooked.run(*args)
        except _PREEMPTION_ERRORS:
            raise
        except Exception:
            self._raise_lost_task_of_threads()
            raise

    def _raise_lost_task_of_threads(self) -> None:
        """A queue runner that lost a task is the root cause of a failed step: raise that."""
        try:
            self.coord.raise_requested_exception()
        except _PREEMPTION_ERRORS:
            raise
        except Exception:  # noqa: BLE001 (another error: the step's own error is raised)
            return

    def should_stop(self) -> bool:
        self.coord.raise_requested_exception()
        return self.coord.should_stop() or self.hooked.stop_requested

    def close(self) -> None:
        self.coord.request_stop()
        try:
            self.coord.join(stop_grace_period_secs=self._grace, ignore_live_threads=True)
        except Exception as e:  # noqa: BLE001 (the threads' errors were reported already)
            _log.debug("Ignored error of a thread at close: %s", e)
        finally:
            _close_quietly(self.hooked.sess)


class _CoordinatedSessionCreator:
    """Creates the session, starts the queue runners, finalizes, calls after_create_session."""

    def __init__(self, session_creator: Any, hooks: list, stop_grace_period_secs: float) -> None:
        self._creator = session_creator
        self._hooks = hooks
        self._grace = stop_grace_period_secs
        self.tf_sess: Any = None
        self.coord: Coordinator | None = None

    def create_session(self) -> _CoordinatedSession:
        self.tf_sess = self._creator.create_session()
        self.coord = Coordinator()
        start_queue_runners(sess=self.tf_sess, coord=self.coord)
        get_default_graph().finalize()
        for hook in self._hooks:
            hook.after_create_session(self.tf_sess, self.coord)
        return _CoordinatedSession(_HookedSession(self.tf_sess, self._hooks), self.coord,
                                   self._grace)


class _RecoverableSession:
    """Re-creates the session when a step fails because a task was lost (preemption).

    tfteach: the *first* session is not retried (TF retries it too): a wrong address or a
    task that never started fails at once with its UnavailableError instead of hanging.
    """

    def __init__(self, creator: _CoordinatedSessionCreator, recover: bool = True) -> None:
        self._creator = creator
        self._recover_errors = _PREEMPTION_ERRORS if recover else ()
        self.sess: _CoordinatedSession | None = creator.create_session()

    def _create(self) -> _CoordinatedSession:
        while True:
            try:
                return self._creator.create_session()
            except self._recover_errors as e:
                _log.info("An error was raised while a session was being created. This may be "
                          "due to a preemption of a connected worker or parameter server. A "
                          "new session will be created. Error: %s", e)
                time.sleep(RECOVERY_WAIT_SECS)

    def run(self, *args: Any) -> Any:
        while True:
            try:
                if self.sess is None:
                    self.sess = self._create()
                return self.sess.run(*args)
            except self._recover_errors as e:
                self._recover(e)

    def _recover(self, error: BaseException) -> None:
        _log.warning("An error was raised. This may be due to a preemption in a connected "
                     "worker or parameter server. The current session will be closed and a "
                     "new session will be created. Error: %s", error)
        self.close()
        self.sess = None

    def should_stop(self) -> bool:
        try:
            return self.sess is None or self.sess.should_stop()
        except self._recover_errors as e:
            self._recover(e)
            self.sess = self._create()
            return False

    def close(self) -> None:
        if self.sess is not None:
            self.sess.close()


class MonitoredSession:
    """A session for training loops: hooks, queue runners, recovery from lost tasks."""

    def __init__(self, session_creator: Any = None, hooks: list | None = None,
                 stop_grace_period_secs: float = 120, should_recover: bool = True) -> None:
        g = get_default_graph()
        self._graph = g
        self._graph_was_finalized = g.finalized
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._creator = _CoordinatedSessionCreator(session_creator or ChiefSessionCreator(),
                                                   self._hooks, stop_grace_period_secs)
        self._sess: _RecoverableSession | None = _RecoverableSession(self._creator,
                                                                    should_recover)

    graph = property(lambda self: self._graph)

    def run(self, fetches: Any, feed_dict: dict | None = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        if self._sess is None:
            raise RuntimeError("Session is already closed.")
        return self._sess.run(fetches, feed_dict, options, run_metadata)

    def should_stop(self) -> bool:
        return self._sess is None or self._sess.should_stop()

    def close(self) -> None:
        self._close_internal(None)

    def _close_internal(self, exception_type: Any) -> None:
        try:
            if not exception_type and self._creator.tf_sess is not None:
                for hook in self._hooks:
                    hook.end(self._creator.tf_sess)
        finally:
            try:
                if self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._sess.close()
            finally:
                self._sess = None
                self._creator.tf_sess = None
                self._creator.coord = None
                if not self._graph_was_finalized:
                    self._graph._finalized = False   # TF's _unsafe_unfinalize

    def __enter__(self) -> MonitoredSession:
        return self

    def __exit__(self, exception_type: type[BaseException] | None,
                 exception_value: BaseException | None, traceback: object) -> bool:
        if exception_type in (errors.OutOfRangeError, StopIteration):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


class SingularMonitoredSession(MonitoredSession):
    """A MonitoredSession for one process (chief), with ``raw_session()``."""

    def __init__(self, hooks: list | None = None, scaffold: Scaffold | None = None,
                 master: str = "", config: Any = None, checkpoint_dir: str | None = None,
                 stop_grace_period_secs: float = 120) -> None:
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir)
        super().__init__(creator, hooks, stop_grace_period_secs, should_recover=False)

    def raw_session(self) -> Any:
        return self._creator.tf_sess


def MonitoredTrainingSession(master: str = "", is_chief: bool = True,
                             checkpoint_dir: str | None = None, scaffold: Scaffold | None = None,
                             hooks: list | None = None, chief_only_hooks: list | None = None,
                             save_checkpoint_secs: Any = USE_DEFAULT,
                             save_summaries_steps: Any = USE_DEFAULT,
                             save_summaries_secs: Any = USE_DEFAULT, config: Any = None,
                             stop_grace_period_secs: float = 120, log_step_count_steps: int = 100,
                             max_wait_secs: float = 7200,
                             save_checkpoint_steps: Any = USE_DEFAULT,
                             summary_dir: str | None = None) -> MonitoredSession:
    """A MonitoredSession set up for distributed training (TF 1.x).

    The chief (``is_chief=True``) restores the latest checkpoint of ``checkpoint_dir`` or
    initializes the variables, and saves checkpoints every ``save_checkpoint_secs`` (600 by
    default) or ``save_checkpoint_steps``; the other workers wait until it is ready. As in
    TF, the chief's hooks create ``checkpoint_dir`` (and ``summary_dir``) when missing.
    Summaries are not written (tfteach has no summary writer); those arguments are accepted.
    """
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, hooks or [], stop_grace_period_secs)
    creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                  checkpoint_dir=checkpoint_dir)
    all_hooks = list(chief_only_hooks or [])
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(every_n_steps=log_step_count_steps,
                                             output_dir=summary_dir))
        if _any_positive(*_every(save_summaries_steps, save_summaries_secs, 100, None)):
            os.makedirs(summary_dir, exist_ok=True)   # where TF's SummarySaverHook writes
    steps, secs = _every(save_checkpoint_steps, save_checkpoint_secs, None, 600)
    if checkpoint_dir and _any_positive(steps, secs):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=steps, save_secs=secs,
                                             scaffold=scaffold))
    all_hooks.extend(hooks or [])
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)


def _every(steps: Any, secs: Any, default_steps: Any, default_secs: Any) -> tuple[Any, Any]:
    """TF's resolution of a (steps, secs) pair of arguments that may be USE_DEFAULT."""
    if steps is USE_DEFAULT and secs is USE_DEFAULT:
        return default_steps, default_secs
    return (None if steps is USE_DEFAULT else steps), (None if secs is USE_DEFAULT else secs)


def _any_positive(*values: Any) -> bool:
    return any(v is not None and v > 0 for v in values)
