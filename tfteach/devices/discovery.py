"""Finding a task's devices: real GPUs, virtual GPUs, CPUs, and the options that shape them.

This module holds the process's device registry, the one piece of global state besides the
default graph: the virtual-GPU settings (``set_virtual_gpus``), a cache of CPU devices, and
TF's process-wide GPU state (``_ProcessGPUs``): every session and Server of a process shares
one memory budget per TF GPU id.

Rules, in the order they apply:
1. Real GPUs come from CuPy (CUDA applies ``CUDA_VISIBLE_DEVICES`` itself). With none, there
   are ``TFTEACH_VIRTUAL_GPUS`` (default 2) virtual GPUs; ``CUDA_VISIBLE_DEVICES`` masks and
   renumbers them as CUDA does (an invalid id ends the list; an empty value hides all).
2. ``gpu_options.visible_device_list`` maps visible GPUs to TF's GPU ids, with TF's errors;
   as in TF, a TF GPU id keeps the CUDA device it was first mapped to in this process
   (another one is TF's AlreadyExistsError).
3. ``device_count`` caps GPUs and sets the number of CPUs.
4. ``per_process_gpu_memory_fraction`` and ``allow_growth`` set each GPU's budget, once per
   process: the first session (or Server, or ``record``ing call) that creates a GPU fixes
   them, and later sessions' values are ignored, as TF ignores them.
5. A virtual GPU's memory is shared with other processes only through ``ledger``
   (``TFTEACH_GPU_LEDGER``); ``reset_virtual_gpus`` (or other settings) starts afresh.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from tfteach.devices import gpu as _gpu
from tfteach.devices import ledger
from tfteach.devices.base import MiB, CPUDevice, Device, MemoryBudget, VirtualGPUDevice
from tfteach.errors import AlreadyExistsError, FailedPreconditionError, InvalidArgumentError
from tfteach.framework.device_spec import DeviceSpec
from tfteach.i18n import tr

DEFAULT_VIRTUAL_GPUS = 2
DEFAULT_VIRTUAL_MEMORY_MB = 1024
SCRATCH_BYTES = 1280        # TF's first allocation on a new GPU device: its scratch buffer


@dataclass
class VirtualGPUSettings:
    count: int | None = None
    memory_limit_mb: int | list | None = None
    speeds: list = field(default_factory=list)


_settings = VirtualGPUSettings()
_cache: dict[tuple, Device] = {}
_lock = threading.RLock()


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
    """Back to the defaults (environment, then 2 virtual GPUs), and forget the GPU options
    and memory this process's sessions fixed, as a restarted program would."""
    global _settings
    _settings = VirtualGPUSettings()
    with _lock:
        _machines.clear()
    ledger.release_all()


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
                                       hint=tr("use comma-separated GPU ids such as '1,0'."))
        i = int(entry)
        if i >= len(visible):
            raise InvalidArgumentError(f"'visible_device_list' listed an invalid GPU id '{i}' "
                                       f"but visible device count is {len(visible)}",
                                       hint=tr("ids count the GPUs this process can see, "
                                               "from 0."))
        if visible[i] in out:
            raise InvalidArgumentError(f"visible_device_list contained a duplicate entry: {spec}")
        out.append(visible[i])
    return out


def local_devices(job: str = "localhost", task: int = 0, device_count: dict | None = None,
                  gpu_options: Any = None, record: bool = True) -> list[Device]:
    """This task's devices, GPUs first, as a fresh session would see them. ``record=False``
    only looks: it leaves the process's GPUs unset if no session or Server set them yet."""
    device_count = dict(device_count or {})
    speed = float(os.environ.get("TFTEACH_DEVICE_SPEED", "1") or 1)
    n_cpu = int(device_count.get("CPU", 1))
    devices: list[Device] = [_cached(("CPU", job, task, i, speed), lambda i=i: CPUDevice(
        DeviceSpec(job, 0, task, "CPU", i), "", _host_memory(), speed=speed)) for i in range(n_cpu)]
    cap = device_count.get("GPU")
    return _gpus(job, task, gpu_options, speed, None if cap is None else int(cap),
                 record) + devices


@dataclass
class _ProcessGPUs:
    """TF's process-wide GPU state. TF maps each TF GPU id to a CUDA device once per process
    (GpuIdManager) and creates one allocator per TF GPU id, with the GPUOptions of the
    session or Server that created it first (GPUProcessState::GetGPUAllocator); a later
    session's per_process_gpu_memory_fraction and allow_growth are silently ignored
    (gpu_device.cc: the allocator 'was created before, we'll use it')."""

    platform_ids: dict[int, int] = field(default_factory=dict)   # TF GPU id -> CUDA id
    budgets: dict[int, MemoryBudget] = field(default_factory=dict)
    devices: dict[tuple, Device] = field(default_factory=dict)


_machines: dict[tuple, _ProcessGPUs] = {}


def _gpus(job: str, task: int, gpu_options: Any, speed: float, cap: int | None,
          record: bool) -> list[Device]:
    real = _gpu.gpu_count()
    n_physical = real or virtual_gpu_count()
    visible = list(range(real)) if real else cuda_visible(n_physical)
    mapping = apply_visible_device_list(visible, getattr(gpu_options, "visible_device_list", ""))
    mapping = mapping if cap is None else mapping[:cap]
    fraction = float(getattr(gpu_options, "per_process_gpu_memory_fraction", 0) or 0)
    growth = bool(getattr(gpu_options, "allow_growth", False))
    with _lock:
        state = _machines.setdefault(_machine_key(real, visible), _ProcessGPUs())
        _map_ids(state, [visible.index(phys) for phys in mapping], record)
        return [_gpu_device(state, DeviceSpec(job, 0, task, "GPU", tf_id), phys, fraction,
                            growth, speed, bool(real), record)
                for tf_id, phys in enumerate(mapping)]


def _machine_key(real: int, visible: list[int]) -> tuple:
    """Which simulated machine (and process) the GPUs belong to: other virtual-GPU settings
    or another CUDA_VISIBLE_DEVICES (fixed at start-up for a real process) start afresh."""
    if real:
        return ("real",)
    memory = _settings.memory_limit_mb
    return ("virtual", tuple(visible), tuple(memory) if isinstance(memory, list) else memory,
            tuple(_settings.speeds))


def _map_ids(state: _ProcessGPUs, platform_ids: list[int], record: bool) -> None:
    """TF's GpuIdManager::InsertTfPlatformGpuIdPair: a TF GPU id keeps its CUDA device."""
    for tf_id, platform in enumerate(platform_ids):
        before = state.platform_ids.get(tf_id, platform)
        if before != platform:
            raise AlreadyExistsError(
                f"TensorFlow device (GPU:{tf_id}) is being mapped to multiple CUDA devices "
                f"({platform} now, and {before} previously), which is not supported. This may "
                "be the result of providing different GPU configurations "
                "(ConfigProto.gpu_options, for example different visible_device_list) when "
                "creating multiple Sessions in the same process. This is not  currently "
                "supported.",
                hint=tr("GPU options hold for the whole process: give every session (and "
                        "Server) of a process the same visible_device_list, and split GPUs "
                        "between processes instead (CUDA_VISIBLE_DEVICES, or "
                        "visible_device_list in each program)."))
    if record:
        for tf_id, platform in enumerate(platform_ids):
            state.platform_ids.setdefault(tf_id, platform)


def _gpu_device(state: _ProcessGPUs, spec: DeviceSpec, phys: int, fraction: float,
                growth: bool, speed: float, real: bool, record: bool) -> Device:
    """The GPU device of ``spec``, on the process's allocator for its TF GPU id."""
    key = (spec.to_string(), phys, speed)
    dev = state.devices.get(key)
    if dev is not None:
        return dev
    budget = state.budgets.get(spec.device_index)
    if budget is not None:
        limit, growth = budget.limit, budget.allow_growth
    else:
        limit = _memory_limit(phys, fraction, real)
    if real:
        dev = _gpu.CuPyGPUDevice(spec, phys, limit, growth)
    else:
        dev = _virtual_gpu(spec, phys, limit, growth, speed)
    if not record:
        return dev if budget is None else _on_budget(dev, budget)
    if budget is None:
        budget = state.budgets[spec.device_index] = dev.memory
        if not real:
            _share_with_processes(budget, phys, spec.device_index)
    state.devices[key] = _on_budget(dev, budget)
    return dev


def _on_budget(dev: Device, budget: MemoryBudget) -> Device:
    dev.memory = budget
    return dev


def _memory_limit(phys: int, fraction: float, real: bool) -> int:
    """The allocator's limit: ``fraction`` of the GPU, or (no fraction) a real GPU's memory
    less TF's reserve for the system, a virtual GPU's whole memory."""
    total = _gpu.describe(phys)[1] if real else _virtual_total(phys)
    if fraction:
        return int(total * fraction)
    return int(total - _min_system_memory(total)) if real else total


def _virtual_total(phys: int) -> int:
    limit_mb = _settings.memory_limit_mb
    if isinstance(limit_mb, list):
        limit_mb = limit_mb[phys] if phys < len(limit_mb) else DEFAULT_VIRTUAL_MEMORY_MB
    return int((limit_mb or DEFAULT_VIRTUAL_MEMORY_MB) * MiB)


def _share_with_processes(budget: MemoryBudget, phys: int, tf_id: int) -> None:
    """Take the allocator's first region from a GPU shared through ``ledger`` (if named). A
    GPU with no memory left fails device creation as TF's scratch buffer does."""
    path = ledger.folder()
    if path is None:
        return
    region = ledger.Region(path, phys, _virtual_total(phys))
    held = region.grow(budget.reserved, SCRATCH_BYTES)
    if held < SCRATCH_BYTES:
        raise FailedPreconditionError(
            f"Failed to allocate scratch buffer for device {tf_id}",
            hint=tr("other processes hold all of this GPU's memory: stop one, or give each a "
                    "smaller per_process_gpu_memory_fraction."))
    budget.reserved = held
    budget.extend = region.grow


def _virtual_gpu(spec: DeviceSpec, phys: int, limit: int, growth: bool,
                 task_speed: float) -> Device:
    speed = (_settings.speeds[phys] if phys < len(_settings.speeds) else 1.0) * task_speed
    desc = (f"device: {spec.device_index}, name: tfteach virtual GPU (backed by the CPU), "
            f"pci bus id: virtual:{phys}, compute capability: 0.0")
    if speed != 1.0:
        desc += f", speed: {speed:g}x"
    return VirtualGPUDevice(spec, desc, limit, phys, speed, growth)


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
