"""Devices: where kernels run, what memory they have, and how values move between them.

A ``Device`` has TF's full name (``/job:localhost/replica:0/task:0/device:GPU:0``), a type,
an index, a description, an array module ``xp`` (NumPy or CuPy) and a ``MemoryBudget``.
Kernels see the device through their context and call ``from_host``/``to_host`` for values
that must live in host memory. ``copy_from`` moves a value from another device (a real copy,
so a cross-device edge costs what a transfer costs).

A virtual GPU is a CPU-backed device: same NumPy kernels, its own budget, its own worker
thread, one BLAS thread (one core's worth of compute), and an optional ``speed`` below 1
that stretches every kernel's wall time, to model a straggler.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from tfteach.errors import ResourceExhaustedError
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.dtypes import as_dtype
from tfteach.i18n import tr

MiB = 1 << 20


def oom_hint() -> str:
    """What to do when a device's allocator reached its limit."""
    return tr("use smaller tensors or batches, free tensors you no longer need, or give the "
              "device more memory (gpu_options.per_process_gpu_memory_fraction, or "
              "tfteach.config.set_virtual_gpus(n, memory_limit_mb=...)).")


def shared_oom_hint() -> str:
    """What to do when other processes hold the GPU memory below the allocator's limit."""
    return tr("other processes hold the rest of this GPU, so its allocator could not reserve "
              "up to its limit (see the 'failed to allocate' lines above): give every process "
              "a fraction that sums to at most 1, or stop one of them.")


class MemoryBudget:
    """Bytes of live tensors on one device, against a limit (the allocator's view).

    ``reserved`` is the allocator's region: the whole limit at once, or (``allow_growth``)
    1 MiB doubling as tensors need more. ``extend(want, need)``, when set (a virtual GPU
    shared with other processes, see ``ledger``), takes the region from the GPU and returns
    the bytes held; going past what it could get is an OOM even below the limit.
    """

    def __init__(self, limit: int, allocator_name: str, allow_growth: bool = False) -> None:
        self.limit = int(limit)
        self.allocator_name = allocator_name
        self.allow_growth = allow_growth
        self.used = 0
        self.peak = 0
        self.reserved = 1 * MiB if allow_growth else self.limit
        self.extend: Callable[[int, int], int] | None = None
        self._lock = threading.Lock()

    def alloc(self, nbytes: int, shape: Any, dtype: Any, op_name: str, device_name: str) -> None:
        with self._lock:
            used = self.used + nbytes
            if used > self.limit or (used > self.reserved and not self._reserve(used)):
                raise self._oom(nbytes, shape, dtype, op_name, device_name)
            self.used = used
            self.peak = max(self.peak, used)

    def take(self, nbytes: int, value: Any, op_name: str, device_name: str) -> None:
        """``alloc`` without the lock, for the single-threaded executor loop."""
        used = self.used + nbytes
        if used > self.limit or (used > self.reserved and not self._reserve(used)):
            raise self._oom(nbytes, value.shape, value.dtype, op_name, device_name)
        self.used = used
        if used > self.peak:
            self.peak = used

    def _reserve(self, used: int) -> bool:
        """Grow the region to hold ``used`` bytes (doubling with allow_growth, else the whole
        limit); False when the GPU has no more memory to give."""
        want = self.limit
        if self.allow_growth:
            want = self.reserved
            while want < used:
                want = min(want * 2, self.limit)
        if self.extend is not None:
            want = self.extend(want, used)
        self.reserved = max(self.reserved, want)
        return used <= self.reserved

    def free(self, nbytes: int) -> None:
        with self._lock:
            self.used = max(0, self.used - nbytes)

    def _oom(self, nbytes: int, shape: Any, dtype: Any, op_name: str, device_name: str):
        dims = ",".join(str(d) for d in shape)
        region, hint = "", oom_hint()
        if self.used + nbytes <= self.limit:        # below the limit: the GPU itself is full
            region, hint = f"reserved: {self.reserved / MiB:.1f} MiB, ", shared_oom_hint()
        try:
            tf_type = as_dtype(dtype).tf_name
        except TypeError:
            tf_type = str(dtype)
        return ResourceExhaustedError(
            f"OOM when allocating tensor with shape[{dims}] and type {tf_type} on "
            f"{device_name} by allocator {self.allocator_name}\n"
            f"\t [[Node: {op_name}]]\n"
            f"(in use: {self.used / MiB:.1f} MiB, {region}limit: {self.limit / MiB:.1f} MiB, "
            f"this tensor: {nbytes / MiB:.1f} MiB)",
            hint=hint)


class Device:
    """One device of one task; CPU and virtual GPU both run NumPy."""

    xp = np
    is_virtual = False
    is_gpu = False

    def __init__(self, spec: DeviceSpec, description: str, memory_limit: int,
                 physical_index: int | None = None, speed: float = 1.0,
                 allow_growth: bool = False) -> None:
        self.spec = spec
        self.name = spec.to_string()
        self.device_type = spec.device_type
        self.index = spec.device_index
        self.short_name = f"{spec.device_type}:{spec.device_index}"
        self.description = description
        self.memory_limit = int(memory_limit)
        self.physical_index = physical_index
        self.speed = float(speed)
        self.memory = MemoryBudget(memory_limit, f"{spec.device_type}_{spec.device_index}_bfc",
                                   allow_growth)

    # -- moving values ---------------------------------------------------------------------
    def from_host(self, value: Any) -> Any:
        return value

    def to_host(self, value: Any) -> Any:
        return value

    def copy_from(self, value: Any, src: "Device") -> Any:
        """A real copy of ``value`` (on ``src``) into this device's memory."""
        if isinstance(value, np.ndarray):
            return value.copy()
        return src.to_host(value) if src.is_gpu else value

    # -- execution -------------------------------------------------------------------------
    def kernel_for(self, kernel: Callable[..., Any]) -> Callable[..., Any]:
        """``kernel`` as this device runs it (a real GPU moves host inputs first)."""
        return kernel

    def thread_init(self) -> None:
        """Called once in this device's worker thread (GPU devices bind their stream)."""

    def synchronize(self) -> None:
        """Wait for queued work (a no-op for host devices)."""

    @property
    def blas_threads(self) -> int | None:
        """BLAS threads this device computes with (None: the library default)."""
        return 1 if self.is_virtual else None

    def attributes(self) -> dict:
        return {"name": self.name, "device_type": self.device_type,
                "memory_limit": self.memory_limit, "description": self.description,
                "physical_index": self.physical_index, "speed": self.speed,
                "is_virtual": self.is_virtual}

    def __repr__(self) -> str:
        return f"<Device {self.name} ({self.description or self.device_type})>"


class CPUDevice(Device):
    """A host CPU device."""


class VirtualGPUDevice(Device):
    """A GPU that is really the CPU: NumPy kernels, a separate budget and worker thread."""

    is_virtual = True
    is_gpu = False
