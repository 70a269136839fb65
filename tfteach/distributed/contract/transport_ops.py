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
Kernels reach their task's engine through ``ctx.resources`` (a ``StepResources``: the
partition's containers plus the current step id and outbox).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.distributed.contract import modelled_network
from tfteach.framework.registry import ALL_TYPES, register_op
from tfteach.ops.common import no_output_fn
from tfteach.ops.control_flow_ops import DEAD
from tfteach.runtime.executor import Pending


def _send_kernel(ctx: Any, value: Any) -> None:
    """Leave ``value`` for its ``_Recv``; a dead one (from an untaken cond branch) goes as
    TF sends it: an empty tensor marked ``is_dead``, and the ``_Recv`` gives ``DEAD``."""
    res = ctx.resources
    if value is DEAD:
        res.engine.rendezvous.send(res.step_id, ctx.attrs["key"], _EMPTY, is_dead=True)
    elif ctx.attrs.get("to_master"):
        res.outbox[ctx.attrs["key"]] = ctx.device.to_host(value)
    else:
        res.engine.rendezvous.send(res.step_id, ctx.attrs["key"], ctx.device.to_host(value))


def _recv_kernel(ctx: Any) -> Pending:
    res = ctx.resources
    pending = Pending()
    arrived = modelled_network.shaped(pending, ctx.attrs, res.engine.task.task_name)
    res.engine.pull(res.step_id, ctx.attrs, ctx.device, arrived, res.timeout_s)
    return pending


_EMPTY = np.zeros(0, np.float32)

# A _Send runs with a dead input too (the runtime's frames call it), to pass the deadness on.
register_op("_Send", no_output_fn, _send_kernel, gpu_types=ALL_TYPES, stateful=True,
            extra={"takes_dead": True})
register_op("_Recv", lambda op: [(op.attrs["dtype"], op.attrs["shape"])], _recv_kernel,
            gpu_types=ALL_TYPES, dtype_attr="dtype", stateful=True, is_async=True)


class StepResources:
    """What kernels of a registered partition see during one step: the partition's resource
    containers (``mgr``: the task's, or its session's when isolated), the step id, the task
    running the step (``caller``: its master) and the step's outbox (``{rendezvous key:
    value}`` of its ``to_master`` sends). Each step running a partition at the same time has
    its own (``graph_engine``'s slots)."""

    def __init__(self, engine: Any, mgr: Any) -> None:
        self.engine = engine
        self.mgr = mgr
        self.step_id = 0
        self.timeout_s = 60.0
        self.caller = ""
        self.outbox: dict[str, Any] = {}

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
