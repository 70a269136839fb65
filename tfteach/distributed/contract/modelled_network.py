"""Transfers between tasks slowed to a modelled network: ``LocalCluster(network=...)``.

``LocalCluster`` puts the link, its ledger file and the cluster's task names in each task's
environment (``ENV``, JSON; ``task_env``). In such a task ``shaped(pending, attrs, here)``
stands between a ``_Recv`` and its tensor: once a tensor from another task has arrived, the
ledger (``tfteach.hardware.network.LinkLedger``) books the transfer on the sender's and the
receiver's end of the link, and the ``_Recv`` finishes when that modelled transfer ends (a
timer thread resolves it: no device thread waits). The modelled time comes on top of the
loopback transfer's own, so a modelled network never moves a tensor faster than this
machine did. An untraced step's phases carry tensors in RunGraph calls instead: the master
holds each phase until its inputs' modelled transfers end (``hold_inputs``), and each part's
fetches until their transfers to the master end (``hold``).

State: the process's ledger (read from ``ENV`` once) and ``_TIMER`` (a daemon thread and a
heap of (due, seq, action)). Without ``ENV`` nothing is slowed.
"""
from __future__ import annotations

import functools
import heapq
import itertools
import json
import os
import threading
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Callable, Sequence

from tfteach import errors
from tfteach.framework.kernel import Pending
from tfteach.i18n import tr

if TYPE_CHECKING:       # imported when a network is modelled: tasks without one skip it
    from tfteach.hardware.network import LinkLedger
    from tfteach.hardware.profiles import LinkProfile

ENV = "TFTEACH_NETWORK"


def task_env(link: "LinkProfile", ledger_path: str, tasks: Sequence[str]) -> str:
    """The value of ``ENV`` for a task of a cluster on ``link``."""
    return json.dumps({"link": asdict(link), "ledger": ledger_path, "tasks": list(tasks)})


@functools.lru_cache(maxsize=1)
def _ledger() -> "LinkLedger | None":
    raw = os.environ.get(ENV)
    if not raw:
        return None
    from tfteach.hardware.network import LinkLedger
    from tfteach.hardware.profiles import LinkProfile

    spec = json.loads(raw)
    return LinkLedger(spec["ledger"], spec["tasks"], LinkProfile(**spec["link"]))


def modelled() -> bool:
    """Whether this task's transfers are slowed to a modelled network (``ENV`` is set)."""
    return _ledger() is not None


def shaped(pending: Pending, attrs: dict, here: str) -> Pending:
    """The Pending a ``_Recv``'s pull should resolve: ``pending`` itself, or (a tensor from
    another task on a modelled network) one whose value reaches ``pending`` when the
    modelled transfer ends."""
    ledger = _ledger()
    src = attrs.get("src_task", here)
    if ledger is None or src == here or src not in ledger.tasks or here not in ledger.tasks:
        return pending
    arrived = Pending()

    def deliver(value: Any, error: BaseException | None) -> None:
        if error is not None:
            pending.resolve(error=error)
            return
        try:
            _, end = ledger.claim(src, here, int(getattr(value, "nbytes", 0)))
        except OSError:             # the cluster is closing: its ledger is gone
            pending.resolve(value)
            return
        _TIMER.at(end, lambda: pending.resolve(value))

    def cancel() -> None:           # before arrival the pull's own cancellation answers
        if not arrived.done:
            arrived.cancel()
            return
        pending.resolve(error=errors.CancelledError(
            f"Step cancelled while {attrs.get('tensor', '')} crossed the modelled network"))

    pending.on_cancel = cancel
    arrived.add_done_callback(deliver)
    return arrived


def hold_inputs(inputs: Sequence[tuple[str, Any]], here: str, timeout_s: float) -> None:
    """Wait until the modelled transfers of a phase's inputs to task ``here`` end:
    ``inputs`` are (rendezvous key, value) pairs that the master carries in RunGraph
    calls (an untraced step's phases). Each is booked from the task of the key's sending
    device, so a tensor between two other tasks costs one transfer, as if sent directly."""
    hold([(key.split(";", 1)[0].rsplit("/device:", 1)[0], value) for key, value in inputs],
         here, timeout_s)


def hold(transfers: Sequence[tuple[str, Any]], here: str, timeout_s: float) -> None:
    """Wait until the modelled transfers of ``transfers`` ((sending task, value) pairs that
    reached task ``here``) end. DeadlineExceededError if they would end after
    ``timeout_s``."""
    ledger = _ledger()
    if ledger is None or here not in ledger.tasks:
        return
    due = 0.0
    for src, value in transfers:
        if src != here and src in ledger.tasks:
            try:
                due = max(due, ledger.claim(src, here, int(getattr(value, "nbytes", 0)))[1])
            except OSError:         # the cluster is closing: its ledger is gone
                return
    if due - time.monotonic() > timeout_s:
        time.sleep(timeout_s)
        raise errors.DeadlineExceededError(
            f"Timed out after {timeout_s:g} s: tensors for {here} are still crossing the "
            f"modelled network ({ledger.link.name})",
            hint=tr("the modelled link is too slow for this step: give the step a longer "
                    "timeout (RunOptions.timeout_in_ms), send fewer bytes or model a faster "
                    "network."))
    while (left := due - time.monotonic()) > 0:
        time.sleep(left)


class _Timer:
    """Runs actions at monotonic times on one daemon thread, started on first use."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._cv = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def at(self, due: float, action: Callable[[], None]) -> None:
        with self._cv:
            heapq.heappush(self._heap, (due, next(self._seq), action))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tfteach-network",
                                                daemon=True)
                self._thread.start()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cv.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                action = heapq.heappop(self._heap)[2]
            action()


_TIMER = _Timer()
