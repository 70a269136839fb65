"""``tf.train.replica_device_setter``: put variables on parameter servers, the rest on a worker.

The setter is a device function (``with tf.device(setter):``). For each new op, TF's rule
(TF's ``device_setter.py``): a *ps op* (``VariableV2`` and friends) gets ``ps_device`` with a task
chosen by ``ps_strategy`` (round-robin by default), but only when its own device names no
other job; every other op gets ``worker_device``. The op's own device fields always win
(``merge_devices``), so an explicitly placed variable keeps its device and does not advance
the round-robin counter.

State: the strategy's counter (``_RoundRobinStrategy._next_task``) or per-task loads
(``GreedyLoadBalancingStrategy._ps_loads``). The cluster is duck-typed (``as_dict()``, a
plain dict, or a ``ClusterDef``'s ``job`` list), so this module never imports the cluster
runtime.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tfteach.errors import with_hint
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.tensor_shape import as_shape
from tfteach.i18n import tr

STANDARD_PS_OPS = ("Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
                   "MutableHashTableV2", "MutableHashTableOfTensors",
                   "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
                   "MutableDenseHashTableV2", "VarHandleOp")

_log = logging.getLogger("tfteach.train")


class _RoundRobinStrategy:
    """Task 0, 1, ..., n-1, 0, ... for successive ps ops."""

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self.reset()

    def reset(self) -> None:
        self._next_task = 0

    def __call__(self, unused_op: Any) -> int:
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Each ps op goes to the task with the least load so far (ties: the lowest index).

    ``load_fn(op)`` measures an op's load, e.g. ``byte_size_load_fn``.
    """

    def __init__(self, num_tasks: int, load_fn: Callable[[Any], float]) -> None:
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = np.zeros(num_tasks)

    def __call__(self, op: Any) -> int:
        task = int(np.argmin(self._ps_loads))
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op: Any) -> int:
    """The byte size of a single-output op's value (a variable's size)."""
    if len(op.outputs) != 1:
        raise ValueError(f"Op {op} must have a single output")
    output = op.outputs[0]
    shape = output.get_shape()
    if not shape.is_fully_defined():
        shape = as_shape(op.get_attr("shape"))
    if not shape.is_fully_defined():
        raise ValueError(with_hint(f"Shape {shape} is not fully defined.", tr(
            "give the variable a fully known shape so its byte size can balance the ps "
            "tasks.")))
    return shape.num_elements() * output.dtype.size


class _ReplicaDeviceChooser:
    """The device function returned by ``replica_device_setter``."""

    def __init__(self, ps_tasks: int, ps_device: str, worker_device: str, merge_devices: bool,
                 ps_ops: Sequence[str], ps_strategy: Callable[[Any], int]) -> None:
        self._ps_tasks = ps_tasks
        self._ps_device = ps_device
        self._worker_device = worker_device
        self._merge_devices = merge_devices
        self._ps_ops = list(ps_ops)
        self._ps_strategy = ps_strategy

    def device_function(self, op: Any) -> str:
        """The device for ``op`` (an Operation, or a NodeDef-like dict with 'op' and 'device')."""
        op_type, device = _type_and_device(op)
        if not self._merge_devices and device:
            return device
        current = DeviceSpec.from_string(device or "")
        if self._ps_tasks and self._ps_device and op_type in self._ps_ops:
            ps = DeviceSpec.from_string(self._ps_device)
            if ps.job and (not current.job or current.job == ps.job):
                ps = ps.replace(task=int(self._ps_strategy(op)))
            return ps.merge_from(current).to_string()
        worker = DeviceSpec.from_string(self._worker_device or "")
        return worker.merge_from(current).to_string()


def _type_and_device(op: Any) -> tuple[str, str]:
    if isinstance(op, dict):
        return op["op"], op.get("device", "")
    return op.type, op.device


def replica_device_setter(ps_tasks: int = 0, ps_device: str = "/job:ps",
                          worker_device: str = "/job:worker", merge_devices: bool = True,
                          cluster: Any = None, ps_ops: Sequence[str] | None = None,
                          ps_strategy: Callable[[Any], int] | None = None
                          ) -> Callable[[Any], str] | None:
    """A device function for ``tf.device``: variables on ps tasks, other ops on the worker.

    With ``cluster`` (a ClusterSpec, a dict or a ClusterDef), ``ps_tasks`` is the size of
    the ps job.
    Returns None when there are no ps tasks (then ``tf.device(None)`` changes nothing).
    """
    if cluster is not None:
        jobs = _cluster_dict(cluster)
        ps_job = DeviceSpec.from_string(ps_device).job
        if ps_job not in jobs or jobs[ps_job] is None:
            return None
        ps_tasks = len(jobs[ps_job])
    if ps_tasks == 0:
        return None
    if ps_ops is None:
        ps_ops = list(STANDARD_PS_OPS)
    if not merge_devices:
        _log.warning("DEPRECATION: It is recommended to set merge_devices=true in "
                     "replica_device_setter")
    if ps_strategy is None:
        ps_strategy = _RoundRobinStrategy(ps_tasks)
    if not callable(ps_strategy):
        raise TypeError("ps_strategy must be callable")
    chooser = _ReplicaDeviceChooser(ps_tasks, ps_device, worker_device, merge_devices, ps_ops,
                                    ps_strategy)
    return chooser.device_function


def _cluster_dict(cluster: Any) -> dict:
    """``{job: tasks}`` from a ClusterSpec, a dict or a ClusterDef (``as_cluster_def()``)."""
    if hasattr(cluster, "as_dict"):
        return cluster.as_dict()
    if isinstance(cluster, dict):
        return cluster
    if type(cluster).__name__ == "ClusterDef":
        return {job.name: dict(job.tasks) for job in cluster.job}
    raise TypeError(with_hint(
        "`cluster` must be a dictionary mapping one or more job names to lists of network "
        "addresses, or a `ClusterDef` protocol buffer",
        tr("pass tf.train.ClusterSpec({'ps': [...], 'worker': [...]}), the same dict, or its "
           "as_cluster_def().")))
