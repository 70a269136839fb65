"""The rendezvous table where a Send leaves a tensor and a Recv (local or RecvTensor) takes it.

State, guarded by one condition variable:
- ``_items = {(step_id, key): (value, is_dead)}``: sent and not yet received;
- ``_waiting = {step_id: number of receivers waiting}``;
- ``_aborted = {step_id: OpError}``: steps cancelled by ``abort_step``/``abort_all``
  (the last ``ABORTED_MEMORY`` of them, so late senders and receivers fail fast).
Invariants: every wait has a finite timeout (``DEFAULT_TIMEOUT_S`` if none is given) and ends
in a value, DeadlineExceededError or the step's abort error; a key is received at most once.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from tfteach import errors
from tfteach.i18n import tr

DEFAULT_TIMEOUT_S = 300.0
ABORTED_MEMORY = 1024
SEND_INCARNATION = "0000000000000001"   # of every sending device (tasks keep no history)


def rendezvous_key(src_device: str, dst_device: str, tensor: str,
                   incarnation: str = SEND_INCARNATION) -> str:
    """TF's rendezvous key of ``tensor`` sent from ``src_device`` to ``dst_device``:
    ``src_device;incarnation;dst_device;tensor_name;frame_id:iter_id`` (frame and
    iteration are always 0: tfteach has no control-flow frames)."""
    return f"{src_device};{incarnation};{dst_device};{tensor};0:0"


class Rendezvous:
    """Step-scoped mailbox of tensors, keyed by TF-style rendezvous keys."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: dict[tuple[int, str], tuple[Any, bool]] = {}
        self._waiting: dict[int, int] = {}
        self._aborted: OrderedDict[int, errors.OpError] = OrderedDict()

    def send(self, step_id: int, key: str, value: Any, is_dead: bool = False) -> None:
        """Leave ``value`` for the receiver of ``key`` in step ``step_id``."""
        with self._cond:
            self._raise_if_aborted(step_id)
            if (step_id, key) in self._items:
                raise errors.AlreadyExistsError(
                    f"Send of an already sent tensor: step {step_id}, key {key!r}",
                    hint=tr("Each Send/Recv pair uses its key once per step; use a new step "
                            "id."))
            self._items[(step_id, key)] = (value, is_dead)
            self._cond.notify_all()

    def recv(self, step_id: int, key: str, timeout: float | None = None) -> tuple[Any, bool]:
        """Wait (at most ``timeout`` seconds) for ``key`` in step ``step_id``; take it."""
        timeout = DEFAULT_TIMEOUT_S if timeout is None else max(0.0, float(timeout))
        deadline = time.monotonic() + timeout
        with self._cond:
            self._waiting[step_id] = self._waiting.get(step_id, 0) + 1
            try:
                return self._wait_for(step_id, key, deadline, timeout)
            finally:
                self._waiting[step_id] -= 1
                if not self._waiting[step_id]:
                    del self._waiting[step_id]

    def _wait_for(self, step_id: int, key: str, deadline: float,
                  timeout: float) -> tuple[Any, bool]:
        while True:
            self._raise_if_aborted(step_id)
            if (step_id, key) in self._items:
                return self._items.pop((step_id, key))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.DeadlineExceededError(
                    f"Timed out after {timeout:g} s waiting for tensor {key!r} of step "
                    f"{step_id}",
                    hint=tr("The task that sends it may be slow, stuck or dead; check that "
                            "every task of the cluster is running."))
            self._cond.wait(remaining)

    def abort_step(self, step_id: int, error: errors.OpError | None = None) -> None:
        """Cancel step ``step_id``: drop its tensors and fail its present and future waits."""
        with self._cond:
            self._mark_aborted(step_id, error or errors.CancelledError(
                f"Step {step_id} was cancelled"))
            self._drop(lambda step: step == step_id)
            self._cond.notify_all()

    def cleanup_step(self, step_id: int) -> None:
        """Forget every tensor of a finished step (waiters keep waiting until timeout)."""
        with self._cond:
            self._drop(lambda step: step == step_id)

    def abort_all(self, error: errors.OpError | None = None) -> None:
        """Cancel every step that has tensors or waiters now (Reset / CleanupAll)."""
        with self._cond:
            error = error or errors.CancelledError("All steps were cancelled (reset)")
            for step_id in {step for step, _ in self._items} | set(self._waiting):
                self._mark_aborted(step_id, error)
            self._items.clear()
            self._cond.notify_all()

    def pending(self) -> list[tuple[int, str]]:
        """The ``(step_id, key)`` pairs sent and not yet received."""
        with self._cond:
            return sorted(self._items)

    def _mark_aborted(self, step_id: int, error: errors.OpError) -> None:
        self._aborted[step_id] = error
        self._aborted.move_to_end(step_id)
        while len(self._aborted) > ABORTED_MEMORY:
            self._aborted.popitem(last=False)

    def _drop(self, matches) -> None:
        for step_key in [sk for sk in self._items if matches(sk[0])]:
            del self._items[step_key]

    def _raise_if_aborted(self, step_id: int) -> None:
        error = self._aborted.get(step_id)
        if error is not None:
            raise error
