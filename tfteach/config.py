"""tfteach-only device settings: virtual GPUs and a listing of this process's devices.

``set_virtual_gpus(n, memory_limit_mb=..., speeds=[...])`` configures the CPU-backed GPUs
used when no real GPU is present (call it before creating sessions; it applies to sessions
created afterwards). ``list_devices()`` describes the devices a default session would get.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tfteach.devices import discovery
from tfteach.devices.discovery import reset_virtual_gpus, set_virtual_gpus, virtual_gpu_count

__all__ = ["set_virtual_gpus", "reset_virtual_gpus", "virtual_gpu_count", "list_devices",
           "DeviceDescriptor"]


@dataclass(frozen=True)
class DeviceDescriptor:
    """One device as a learner sees it."""

    name: str
    device_type: str
    description: str
    memory_limit: int
    physical_index: int | None
    speed: float = 1.0
    is_virtual: bool = False


def list_devices(config: Any = None) -> list[DeviceDescriptor]:
    """The devices a session with ``config`` would have here, sorted by name. Only looks:
    unlike TF's ``device_lib.list_local_devices``, it does not fix this process's GPU
    options (the first session or Server does)."""
    devices = discovery.local_devices("localhost", 0,
                                      getattr(config, "device_count", None),
                                      getattr(config, "gpu_options", None), record=False)
    return [DeviceDescriptor(d.name, d.device_type, d.description, d.memory_limit,
                             d.physical_index, d.speed, d.is_virtual)
            for d in sorted(devices, key=lambda d: d.name)]
