"""Session run hooks: code that a MonitoredSession runs around every ``run`` call.

A hook's life: ``begin()`` (graph still editable) -> ``after_create_session(session, coord)``
(each time a session is made, again after a recovery) -> per run ``before_run(context)``
(may add fetches through ``SessionRunArgs``) and ``after_run(context, values)`` (may call
``context.request_stop()``) -> ``end(session)`` when training ends normally.

Hooks here: ``StopAtStepHook``, ``CheckpointSaverHook``, ``StepCounterHook``,
``LoggingTensorHook``, ``NanTensorHook``; ``SecondOrStepTimer`` decides when periodic hooks
fire. State lives in each hook (its timer, its global-step tensor).
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, NamedTuple

import numpy as np

from tfteach.errors import with_hint
from tfteach.framework.graph import GraphKeys, get_default_graph
from tfteach.i18n import tr

_log = logging.getLogger("tfteach.train")


class SessionRunArgs(NamedTuple):
    """What a hook adds to a run: extra fetches, feeds and options."""

    fetches: Any
    feed_dict: Any = None
    options: Any = None


class SessionRunValues(NamedTuple):
    """What a hook gets back: the values of its fetches, the options and run metadata."""

    results: Any
    options: Any
    run_metadata: Any


class SessionRunContext:
    """The run in progress, as a hook sees it; a hook may ask the training loop to stop."""

    def __init__(self, original_args: SessionRunArgs, session: Any) -> None:
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    original_args = property(lambda self: self._original_args)
    session = property(lambda self: self._session)
    stop_requested = property(lambda self: self._stop_requested)

    def request_stop(self) -> None:
        self._stop_requested = True


class SessionRunHook:
    """Base class: every method does nothing."""

    def begin(self) -> None:
        pass

    def after_create_session(self, session: Any, coord: Any) -> None:
        pass

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        return None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        pass

    def end(self, session: Any) -> None:
        pass


def _global_step_read() -> Any:
    """The graph's global step as a tensor (the variable's read), or None."""
    from tfteach.train.training_util import get_global_step
    step = get_global_step(get_default_graph())
    return None if step is None else getattr(step, "value", lambda: step)()


def _require_global_step(hook: str) -> Any:
    step = _global_step_read()
    if step is None:
        raise RuntimeError(with_hint(
            f"Global step should be created to use {hook}.",
            tr("call tf.train.get_or_create_global_step() before building the train op and "
               "pass it to minimize(..., global_step=...).")))
    return step


class SecondOrStepTimer:
    """Fires every ``every_secs`` seconds or every ``every_steps`` steps (exactly one)."""

    def __init__(self, every_secs: float | None = None, every_steps: int | None = None) -> None:
        if (every_secs is None) == (every_steps is None):
            raise ValueError("exactly one of every_secs and every_steps should be provided.")
        self._every_secs = every_secs
        self._every_steps = every_steps
        self.reset()

    def reset(self) -> None:
        self._last_triggered_step: int | None = None
        self._last_triggered_time: float | None = None

    def should_trigger_for_step(self, step: int) -> bool:
        if self._last_triggered_step is None:
            return True
        if self._last_triggered_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_triggered_time + self._every_secs
        return step >= self._last_triggered_step + self._every_steps

    def update_last_triggered_step(self, step: int) -> tuple:
        now = time.time()
        elapsed = None if self._last_triggered_time is None else now - self._last_triggered_time
        steps = None if self._last_triggered_step is None else step - self._last_triggered_step
        self._last_triggered_time = now
        self._last_triggered_step = step
        return elapsed, steps

    def last_triggered_step(self) -> int | None:
        return self._last_triggered_step


class StopAtStepHook(SessionRunHook):
    """Asks to stop once the global step reaches ``last_step`` (or ``num_steps`` more)."""

    def __init__(self, num_steps: int | None = None, last_step: int | None = None) -> None:
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps = num_steps
        self._last_step = last_step

    def begin(self) -> None:
        self._global_step_tensor = _require_global_step("StopAtStepHook")

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._num_steps is not None:
            self._last_step = int(session.run(self._global_step_tensor)) + self._num_steps

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        # The fetched value may predate this run's update; check the real one.
        if int(run_values.results) + 1 >= self._last_step and \
                int(run_context.session.run(self._global_step_tensor)) >= self._last_step:
            run_context.request_stop()


class CheckpointSaverHook(SessionRunHook):
    """Saves a checkpoint at the start, every N seconds or steps, and at the end."""

    def __init__(self, checkpoint_dir: str, save_secs: float | None = None,
                 save_steps: int | None = None, saver: Any = None,
                 checkpoint_basename: str = "model.ckpt", scaffold: Any = None,
                 listeners: list | None = None) -> None:
        if saver is not None and scaffold is not None:
            raise ValueError("You cannot provide both saver and scaffold.")
        self._saver = saver
        self._checkpoint_dir = checkpoint_dir
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._scaffold = scaffold
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])

    def begin(self) -> None:
        os.makedirs(self._checkpoint_dir, exist_ok=True)   # as TF's summary writer does
        self._global_step_tensor = _require_global_step("CheckpointSaverHook")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session: Any, coord: Any) -> None:
        step = int(session.run(self._global_step_tensor))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._timer.should_trigger_for_step(int(run_values.results) + 1):
            step = int(run_context.session.run(self._global_step_tensor))
            if self._timer.should_trigger_for_step(step):
                self._timer.update_last_triggered_step(step)
                if self._save(run_context.session, step):
                    run_context.request_stop()

    def end(self, session: Any) -> None:
        step = int(session.run(self._global_step_tensor))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _get_saver(self) -> Any:
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        savers = get_default_graph().get_collection(GraphKeys.SAVERS)
        if len(savers) != 1:
            raise RuntimeError(with_hint(
                f"There should be exactly one saver in the SAVERS collection, found "
                f"{len(savers)}.", tr("pass saver= to the hook.")))
        return savers[0]

    def _save(self, session: Any, step: int) -> bool:
        _log.info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        stops = [bool(listener.after_save(session, step)) for listener in self._listeners]
        return any(stops)


class StepCounterHook(SessionRunHook):
    """Logs ``global_step/sec`` every N steps (TF also writes it as a summary)."""

    def __init__(self, every_n_steps: int = 100, every_n_secs: float | None = None,
                 output_dir: str | None = None, summary_writer: Any = None) -> None:
        self._timer = SecondOrStepTimer(every_steps=None if every_n_secs else every_n_steps,
                                        every_secs=every_n_secs)
        self._output_dir = output_dir
        self.rates: list[float] = []

    def begin(self) -> None:
        if self._output_dir:
            os.makedirs(self._output_dir, exist_ok=True)   # as TF's summary writer does
        self._global_step_tensor = _require_global_step("StepCounterHook")

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._global_step_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        step = int(run_values.results)
        if self._timer.should_trigger_for_step(step):
            elapsed, steps = self._timer.update_last_triggered_step(step)
            if elapsed and steps:
                self.rates.append(steps / elapsed)
                _log.info("global_step/sec: %g", steps / elapsed)


class LoggingTensorHook(SessionRunHook):
    """Prints the values of some tensors every N local steps (or seconds)."""

    def __init__(self, tensors: Any, every_n_iter: int | None = None,
                 every_n_secs: float | None = None, at_end: bool = False,
                 formatter: Any = None) -> None:
        if not at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and every_n_secs "
                             "must be provided.")
        if isinstance(tensors, dict):
            self._tags, self._tensors = list(tensors), dict(tensors)
        else:
            items = list(tensors)
            self._tags = [getattr(t, "name", str(t)) for t in items]
            self._tensors = dict(zip(self._tags, items, strict=True))
        self._timer = SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter) \
            if (every_n_iter or every_n_secs) else None
        self._formatter = formatter
        self._at_end = at_end
        self._iter = 0

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs | None:
        self._should_trigger = self._timer is not None and \
            self._timer.should_trigger_for_step(self._iter)
        return SessionRunArgs(self._tensors) if self._should_trigger else None

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if self._should_trigger:
            self._timer.update_last_triggered_step(self._iter)
            self._print(run_values.results)
        self._iter += 1

    def end(self, session: Any) -> None:
        if self._at_end:
            self._print(session.run(self._tensors))

    def _print(self, values: dict) -> None:
        """TF logs the line at INFO, which shows only after ``tf.logging.set_verbosity(
        tf.logging.INFO)``; tfteach logs it so once that is set, and prints it otherwise,
        so a learner sees their loss without knowing about verbosity."""
        line = self._formatter(values) if self._formatter is not None else \
            ", ".join(f"{tag} = {np.asarray(values[tag])}" for tag in self._tags)
        if _log.isEnabledFor(logging.INFO):
            _log.info("%s", line)
        else:
            print(line)


class NanTensorHook(SessionRunHook):
    """Stops (or fails with NanLossDuringTrainingError) when the loss becomes NaN."""

    def __init__(self, loss_tensor: Any, fail_on_nan_loss: bool = True) -> None:
        self._loss_tensor = loss_tensor
        self._fail_on_nan_loss = fail_on_nan_loss

    def before_run(self, run_context: SessionRunContext) -> SessionRunArgs:
        return SessionRunArgs(self._loss_tensor)

    def after_run(self, run_context: SessionRunContext, run_values: SessionRunValues) -> None:
        if np.isnan(run_values.results):
            if self._fail_on_nan_loss:
                raise NanLossDuringTrainingError
            _log.warning("Model diverged with loss = NaN.")
            run_context.request_stop()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self) -> str:
        return with_hint("NaN loss during training.", tr(
            "lower the learning rate, or check the input data for NaNs and the loss for "
            "log(0)."))
