"""The tasks and devices a master session works with.

``cluster_targets`` picks the tasks of the cluster that a session's ``device_filters``
match (all when there are none), ``device_specs`` parses the filters, ``RemoteDevice`` is
another task's device as the master's placer sees it (from the attribute dict GetStatus
answers, ``device_attrs``), with no kernels of its own.
"""
from __future__ import annotations

from typing import Sequence

from tfteach import errors
from tfteach.devices.base import Device
from tfteach.distributed.contract.engine_api import TaskInfo
from tfteach.framework.device_spec import DeviceSpec
from tfteach.i18n import tr


def cluster_targets(task: TaskInfo, device_filters: list[str]) -> list[tuple[str, str]]:
    """``(task name, address)`` of every task matching ``device_filters`` (all if none)."""
    filters = device_specs(device_filters)
    out = []
    for job in task.cluster.jobs:
        for i in task.cluster.task_indices(job):
            spec = DeviceSpec(job, 0, i)
            if not filters or any(f.compatible(spec) for f in filters):
                name = f"/job:{job}/replica:0/task:{i}"
                mine = name == task.task_name
                out.append((name, task.address if mine else task.cluster.task_address(job, i)))
    return out


def device_specs(device_filters: Sequence[str]) -> list[DeviceSpec]:
    """The parsed ``device_filters``; InvalidArgumentError naming a malformed one."""
    try:
        return [DeviceSpec.from_string(f) for f in device_filters]
    except (ValueError, TypeError) as e:
        raise errors.InvalidArgumentError(
            f"Malformed device filter in {list(device_filters)!r}: {e}",
            hint=tr("a device filter looks like '/job:ps' or '/job:worker/task:0'.")
        ) from None


class RemoteDevice(Device):
    """Another task's device, as the master's placer sees it (no kernels run here)."""

    def __init__(self, attrs: dict) -> None:
        spec = DeviceSpec.from_string(attrs["name"])
        super().__init__(spec, attrs.get("physical_device_desc", ""),
                         int(attrs.get("memory_limit", 0)))


def device_attrs(d: Device) -> dict:
    """A device as the attribute dict GetStatus and ListDevices answer (``engine_api``)."""
    return {"name": d.name, "device_type": d.device_type, "memory_limit": d.memory_limit,
            "physical_device_desc": d.description, "incarnation": 1}
