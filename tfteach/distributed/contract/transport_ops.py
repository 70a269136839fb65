"""``_Send`` and ``_Recv``: the ops that carry a tensor from one task to another.

The master cuts every cross-task edge into a ``_Send`` in the producer's partition and a
``_Recv`` in the consumer's, both with the same rendezvous ``key`` (TF's format:
``send_device;incarnation;recv_device;tensor_name;0:0``). ``_Send`` leaves the value in its
task's rendezvous; ``_Recv`` pulls it with one RecvTensorInline call (inline, or shared
memory between processes on one host; a large tensor for another host then streams through
RecvTensor). A ``_Send`` marked ``to_master`` leaves it in the step's ``outbox`` instead: it
goes back in the RunGraph answer and the master puts it in its own rendezvous, where the
``_Recv`` marked ``via_master`` waits (see ``partition``). ``_Recv`` is a waiting kernel: it
returns a ``Pending`` that the call's answer (or a pool thread waiting on this task's
rendezvous) resolves, so it never blocks a device thread. On a modelled network
(``LocalCluster(network=...)``: ``modelled_network``) the tensor reaches the ``_Recv`` when
its modelled transfer ends. A dead tensor (a cond's untaken branch) crosses as TF's does:
marked ``is_dead`` (never through the master's RunGraph answer: ``partition`` keeps such
transfers off that route), and the ``_Recv`` gives ``DEAD`` to its step's frames.
The kernels keep to the kernel contract (``tfteach/framework/kernel.py``): they meet only
through ``ctx.resources.rendezvous``, a ``StepRendezvous`` the engine binds to each step
(the task's rendezvous table, the step id, its outbox, and how to fetch a tensor from
another task), and never see the engine.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from tfteach.distributed.contract import modelled_network
from tfteach.distributed.contract.rendezvous import Rendezvous
from tfteach.framework.kernel import KernelContext, Pending
from tfteach.framework.registry import ALL_TYPES, register_op
from tfteach.ops.common import no_output_fn
from tfteach.ops.control_flow_ops import DEAD


def _send_kernel(ctx: KernelContext, value: Any) -> None:
    """Leave ``value`` for its ``_Recv``; a dead one (from an untaken cond branch) goes as
    TF sends it: an empty tensor marked ``is_dead``, and the ``_Recv`` gives ``DEAD``."""
    rendezvous = ctx.resources.rendezvous
    if value is DEAD:
        rendezvous.send(ctx.attrs["key"], _EMPTY, is_dead=True)
    elif ctx.attrs.get("to_master"):
        rendezvous.send_to_master(ctx.attrs["key"], ctx.device.to_host(value))
    else:
        rendezvous.send(ctx.attrs["key"], ctx.device.to_host(value))


def _recv_kernel(ctx: KernelContext) -> Pending:
    rendezvous = ctx.resources.rendezvous
    pending = Pending()
    rendezvous.recv(ctx.attrs, ctx.device,
                    modelled_network.shaped(pending, ctx.attrs, rendezvous.task_name))
    return pending


_EMPTY = np.zeros(0, np.float32)

# A _Send runs with a dead input too (the runtime's frames call it), to pass the deadness on.
register_op("_Send", no_output_fn, _send_kernel, gpu_types=ALL_TYPES, stateful=True,
            extra={"takes_dead": True})
register_op("_Recv", lambda op: [(op.attrs["dtype"], op.attrs["shape"])], _recv_kernel,
            gpu_types=ALL_TYPES, dtype_attr="dtype", stateful=True, is_async=True)


Pull = Callable[[int, Mapping[str, Any], Any, Pending, float], None]


class StepRendezvous:
    """The kernel contract's ``StepRendezvous`` for one step of a partition at a time: the
    task's rendezvous ``table``, the step (``step_id``, ``timeout_s``), its ``outbox``
    (``{rendezvous key: value}`` of its ``to_master`` sends, returned in the RunGraph
    answer) and ``pull(step_id, attrs, device, pending, timeout_s)``, the engine's way to
    fetch a ``_Recv``'s tensor. ``begin`` binds it to the next step."""

    def __init__(self, table: Rendezvous, pull: Pull, task_name: str) -> None:
        self.table = table
        self.task_name = task_name
        self._pull = pull
        self.step_id = 0
        self.timeout_s = 60.0
        self.outbox: dict[str, Any] = {}

    def begin(self, step_id: int, timeout_s: float) -> dict[str, Any]:
        """Bind to step ``step_id``; returns its (new, empty) outbox."""
        self.step_id, self.timeout_s, self.outbox = step_id, timeout_s, {}
        return self.outbox

    def send(self, key: str, value: Any, is_dead: bool = False) -> None:
        self.table.send(self.step_id, key, value, is_dead=is_dead)

    def send_to_master(self, key: str, value: Any) -> None:
        self.outbox[key] = value

    def recv(self, attrs: Mapping[str, Any], device: Any, pending: Pending) -> None:
        self._pull(self.step_id, attrs, device, pending, self.timeout_s)


class StepResources:
    """What kernels of a registered partition see during one step: the partition's resource
    containers (``mgr``: the task's, or its session's when isolated), the step's
    ``rendezvous`` (a ``StepRendezvous``) and the task running the step (``caller``: its
    master). Each step running a partition at the same time has its own
    (``graph_engine``'s slots)."""

    def __init__(self, rendezvous: StepRendezvous, mgr: Any) -> None:
        self.rendezvous = rendezvous
        self.mgr = mgr
        self.caller = ""

    @property
    def timeout_s(self) -> float:
        """The step's timeout (the kernels' ``ctx.deadline``)."""
        return self.rendezvous.timeout_s

    def variable(self, *args: Any) -> Any:
        return self.mgr.variable(*args)

    def rng(self, *args: Any) -> Any:
        return self.mgr.rng(*args)

    def table(self, container: str = "") -> Any:
        return self.mgr.table(container)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.mgr, name)
