"""``WorkerTransport``: the transport half of a worker, shared by every engine.

A task's rendezvous (``rendezvous.Rendezvous``) is where a ``_Send`` (or the master, for a
value that came back in a RunGraph answer) leaves a tensor and where RecvTensor takes it.
``GraphEngine`` (the engine every server runs) and ``ProbeEngine`` (tests and benchmarks)
both inherit this: ``put_tensor``/``recv_tensor``, forgetting a step's tensors, aborting
every wait when the task stops, and the errors for an unknown graph handle and a task
shutting down.
"""
from __future__ import annotations

from typing import Any, Sequence

from tfteach import errors
from tfteach.distributed.contract.engine_api import TaskInfo
from tfteach.distributed.contract.rendezvous import Rendezvous
from tfteach.i18n import tr


class WorkerTransport:
    """The rendezvous of one task and the worker calls that only touch it."""

    def __init__(self, task: TaskInfo) -> None:
        self.task = task
        self.rendezvous = Rendezvous()

    def put_tensor(self, step_id: int, key: str, value: Any, is_dead: bool = False) -> None:
        self.rendezvous.send(step_id, key, value, is_dead)

    def recv_tensor(self, step_id: int, key: str, timeout: float) -> tuple[Any, bool]:
        return self.rendezvous.recv(step_id, key, timeout)

    def cleanup_graph(self, step_id: int) -> None:
        """Forget the tensors of step ``step_id`` (its waits keep waiting)."""
        self.rendezvous.cleanup_step(step_id)

    def cleanup_all(self, containers: Sequence[str]) -> None:
        """Abort every step that has tensors or waits here."""
        self.rendezvous.abort_all()

    def close(self) -> None:
        """Abort every wait: the task is stopping."""
        self.rendezvous.abort_all(self.shutting_down())

    def shutting_down(self) -> errors.CancelledError:
        """The error of a step cut short because this task stops."""
        return errors.CancelledError(
            f"Task {self.task.task_name} is shutting down",
            hint=tr("the task was stopped (a signal or Server.stop()) while the step ran; "
                    "restart it and run the step again."))

    def unknown_graph(self, graph_handle: str, hint: str) -> errors.AbortedError:
        """The error of a RunGraph or DeregisterGraph naming no registered graph."""
        return errors.AbortedError(
            f"Graph handle is not found: {graph_handle!r} on task {self.task.task_name}",
            hint=hint)
