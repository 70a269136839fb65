"""Finding a task's devices: real GPUs, virtual GPUs, CPUs, and the options that shape them.

This module holds the process's device registry, the one piece of global state besides the
default graph: the virtual-GPU settings (``set_virtual_gpus``) and a cache of ``Device``
objects, so that sessions with the same configuration share devices and memory budgets.

Rules, in the order they apply:
1. Real GPUs come from CuPy (CUDA applies ``CUDA_VISIBLE_DEVICES`` itself). With none, there
   are ``TFTEACH_VIRTUAL_GPUS`` (default 2) virtual GPUs; ``CUDA_VISIBLE_DEVICES`` masks and
   renumbers them as CUDA does (an invalid id ends the list; an empty value hides all).
2. ``gpu_options.visible_device_list`` maps visible GPUs to TF's GPU ids, with TF's errors.
3. ``device_count`` caps GPUs and sets the number of CPUs.
4. ``per_process_gpu_memory_fraction`` and ``allow_growth`` set each GPU's budget.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from tfteach.devices import gpu as _gpu
from tfteach.devices.base import MiB, CPUDevice, Device, VirtualGPUDevice
from tfteach.errors import InvalidArgumentError
from tfteach.framework.device_spec import DeviceSpec

DEFAULT_VIRTUAL_GPUS = 2
DEFAULT_VIRTUAL_MEMORY_MB = 1024


@dataclass
class VirtualGPUSettings:
    count: int | None = None
    memory_limit_mb: int | list | None = None
    speeds: list = field(default_factory=list)


_settings = VirtualGPUSettings()
_cache: dict[tuple, Device] = {}
_lock = threading.Lock()


def set_virtual_gpus(n: int, memory_limit_mb: int | list | None = None,
                     speeds: list | None = None) -> None:
    """Use ``n`` CPU-backed GPUs when no real GPU is present (applies to new sessions)."""
    if n < 0:
        raise ValueError(f"set_virtual_gpus: n must be >= 0, got {n}")
    if speeds is not None and len(speeds) != n:
        raise ValueError(f"set_virtual_gpus: got {len(speeds)} speeds for {n} GPUs")
    if speeds and any(s <= 0 or s > 1 for s in speeds):
        raise ValueError("set_virtual_gpus: speeds must be in (0, 1]; 0.5 means half as fast")
    _settings.count = n
    _settings.memory_limit_mb = memory_limit_mb
    _settings.speeds = list(speeds or [])


def reset_virtual_gpus() -> None:
    """Back to the defaults (environment, then 2 virtual GPUs)."""
    global _settings
    _settings = VirtualGPUSettings()


def virtual_gpu_count() -> int:
    if _settings.count is not None:
        return _settings.count
    env = os.environ.get("TFTEACH_VIRTUAL_GPUS")
    if env is not None and env.strip() != "":
        try:
            return max(0, int(env))
        except ValueError:
            raise ValueError(f"TFTEACH_VIRTUAL_GPUS must be a whole number, got {env!r}") from None
    return DEFAULT_VIRTUAL_GPUS


def cuda_visible(n_physical: int) -> list[int]:
    """Physical ids visible under CUDA_VISIBLE_DEVICES, in CUDA's order and rules."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is None:
        return list(range(n_physical))
    out: list[int] = []
    for item in env.split(","):
        item = item.strip()
        if not item.lstrip("-").isdigit() or not 0 <= int(item) < n_physical or int(item) in out:
            break
        out.append(int(item))
    return out


def apply_visible_device_list(visible: list[int], spec: str) -> list[int]:
    """TF's ``gpu_options.visible_device_list``: which visible GPU becomes GPU:0, GPU:1..."""
    if not spec:
        return visible
    out: list[int] = []
    for entry in spec.split(","):
        if not entry.strip().isdigit():
            raise InvalidArgumentError(f"Could not parse entry in 'visible_device_list': "
                                       f"'{entry}'. visible_device_list = {spec}",
                                       hint="use comma-separated GPU ids such as '1,0'.")
        i = int(entry)
        if i >= len(visible):
            raise InvalidArgumentError(f"'visible_device_list' listed an invalid GPU id '{i}' "
                                       f"but visible device count is {len(visible)}",
                                       hint="ids count the GPUs this process can see, from 0.")
        if visible[i] in out:
            raise InvalidArgumentError(f"visible_device_list contained a duplicate entry: {spec}")
        out.append(visible[i])
    return out


def local_devices(job: str = "localhost", task: int = 0, device_count: dict | None = None,
                  gpu_options: Any = None) -> list[Device]:
    """This task's devices, GPUs first, as a fresh session would see them."""
    device_count = dict(device_count or {})
    speed = float(os.environ.get("TFTEACH_DEVICE_SPEED", "1") or 1)
    n_cpu = int(device_count.get("CPU", 1))
    devices: list[Device] = [_cached(("CPU", job, task, i, speed), lambda i=i: CPUDevice(
        DeviceSpec(job, 0, task, "CPU", i), "", _host_memory(), speed=speed)) for i in range(n_cpu)]
    gpus = _gpus(job, task, gpu_options, speed)
    cap = device_count.get("GPU")
    if cap is not None:
        gpus = gpus[: int(cap)]
    return gpus + devices


def _gpus(job: str, task: int, gpu_options: Any, speed: float) -> list[Device]:
    real = _gpu.gpu_count()
    n_physical = real or virtual_gpu_count()
    visible = list(range(real)) if real else cuda_visible(n_physical)
    mapping = apply_visible_device_list(visible, getattr(gpu_options, "visible_device_list", ""))
    fraction = float(getattr(gpu_options, "per_process_gpu_memory_fraction", 0) or 0)
    growth = bool(getattr(gpu_options, "allow_growth", False))
    out = []
    for tf_id, phys in enumerate(mapping):
        spec = DeviceSpec(job, 0, task, "GPU", tf_id)
        if real:
            out.append(_real_gpu(spec, phys, fraction, growth))
        else:
            out.append(_virtual_gpu(spec, phys, fraction, growth, speed))
    return out


def _virtual_gpu(spec: DeviceSpec, phys: int, fraction: float, growth: bool,
                 task_speed: float) -> Device:
    limit_mb = _settings.memory_limit_mb
    if isinstance(limit_mb, list):
        limit_mb = limit_mb[phys] if phys < len(limit_mb) else DEFAULT_VIRTUAL_MEMORY_MB
    total = int((limit_mb or DEFAULT_VIRTUAL_MEMORY_MB) * MiB)
    limit = int(total * fraction) if fraction else total
    speed = (_settings.speeds[phys] if phys < len(_settings.speeds) else 1.0) * task_speed
    desc = (f"device: {spec.device_index}, name: tfteach virtual GPU (backed by the CPU), "
            f"pci bus id: virtual:{phys}, compute capability: 0.0")
    if speed != 1.0:
        desc += f", speed: {speed:g}x"
    key = ("vGPU", spec, phys, limit, growth, speed)
    return _cached(key, lambda: VirtualGPUDevice(spec, desc, limit, phys, speed, growth))


def _real_gpu(spec: DeviceSpec, ordinal: int, fraction: float, growth: bool) -> Device:
    _, total = _gpu.describe(ordinal)
    limit = int(total * fraction) if fraction else int(total - _min_system_memory(total))
    key = ("GPU", spec, ordinal, limit, growth)
    return _cached(key, lambda: _gpu.CuPyGPUDevice(spec, ordinal, limit, growth))


def _min_system_memory(available: int) -> int:
    """TF's reserve below the GPU's memory when no fraction is given."""
    if available < 2 * 1024 * MiB:
        return 225 * MiB
    return max(300 * MiB, int(0.05 * available))


def _cached(key: tuple, make) -> Device:
    with _lock:
        dev = _cache.get(key)
        if dev is None:
            dev = _cache[key] = make()
        return dev


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 1024 * MiB
