"""Real NVIDIA GPUs through CuPy, imported lazily; its absence is normal.

``cupy_module()`` returns CuPy or None (no CuPy, or no usable GPU). A ``CuPyGPUDevice``
runs kernels with ``xp = cupy`` on its own stream (bound in its worker thread), moves values
with ``cupy.asarray``/``cupy.asnumpy``, and describes itself as TF does
(``device: 0, name: ..., pci bus id: ..., compute capability: 9.0``). Its memory budget
also limits CuPy's memory pool, so ``per_process_gpu_memory_fraction`` is real. Its kernels
get their floating inputs on the GPU even where a host-memory op (Shape, Size) led to them
(``kernel_for``).
"""
from __future__ import annotations

import copy
import threading
from typing import Any, Callable

import numpy as np

from tfteach.devices.base import Device
from tfteach.framework.device_spec import DeviceSpec

_CUPY: list = []
_LOCK = threading.Lock()


def cupy_module() -> Any:
    """CuPy if it imports and sees at least one GPU, else None. Cached."""
    with _LOCK:
        if not _CUPY:
            _CUPY.append(_load())
        return _CUPY[0]


def _load() -> Any:
    try:
        import cupy  # noqa: PLC0415 (lazy by design)
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        return cupy
    except Exception:  # ImportError, CUDA driver errors: no real GPU here
        return None


def gpu_count() -> int:
    cp = cupy_module()
    return 0 if cp is None else int(cp.cuda.runtime.getDeviceCount())


def describe(ordinal: int) -> tuple[str, int]:
    """TF's description line and the total memory of CUDA device ``ordinal``."""
    cp = cupy_module()
    props = cp.cuda.runtime.getDeviceProperties(ordinal)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    bus = cp.cuda.runtime.deviceGetPCIBusId(ordinal).lower()
    desc = (f"device: {ordinal}, name: {name}, pci bus id: {bus}, compute capability: "
            f"{props['major']}.{props['minor']}")
    return desc, int(props["totalGlobalMem"])


class CuPyGPUDevice(Device):
    """A real GPU: CuPy kernels on a dedicated stream."""

    is_gpu = True

    def __init__(self, spec: DeviceSpec, ordinal: int, memory_limit: int,
                 allow_growth: bool = False) -> None:
        desc, _ = describe(ordinal)
        super().__init__(spec, desc, memory_limit, physical_index=ordinal,
                         allow_growth=allow_growth)
        self.ordinal = ordinal
        self.xp = cupy_module()
        with self.xp.cuda.Device(ordinal):
            self.stream = self.xp.cuda.Stream(non_blocking=True)
            self.xp.get_default_memory_pool().set_limit(size=memory_limit)

    def thread_init(self) -> None:
        self.xp.cuda.Device(self.ordinal).use()
        self.stream.use()

    def from_host(self, value: Any) -> Any:
        with self.xp.cuda.Device(self.ordinal):
            return self.xp.asarray(value)

    def kernel_for(self, kernel: Callable[..., Any]) -> Callable[..., Any]:
        """``kernel`` with TF's host-memory rules for values in host memory. Shape, Size and
        Rank answer there, as TF's do, and CuPy refuses to mix host and device arrays:
        - an integer kernel with such an input (the shape arithmetic of gradients over a
          batch of unknown size) computes on the host, as TF's int32 kernels on a GPU do;
        - any other kernel gets its floating, complex and bool inputs moved to this GPU
          (``Cast(Size(x), float32)`` in the gradient of a mean). Integer inputs stay
          where they are: shapes, axes and indices are read on the host."""
        def on_device(ctx: Any, *args: Any) -> Any:
            if _integers_on_host(args, self.xp):
                return kernel(_host_view(ctx), *[self.to_host(a) for a in args])
            return kernel(ctx, *[self.from_host(a) if isinstance(a, np.ndarray) and
                                 a.dtype.kind in "fcb" else a for a in args])
        return on_device

    def to_host(self, value: Any) -> Any:
        if isinstance(value, self.xp.ndarray):
            return self.xp.asnumpy(value, stream=self.stream)
        return value

    def copy_from(self, value: Any, src: Device) -> Any:
        with self.xp.cuda.Device(self.ordinal):
            if isinstance(value, self.xp.ndarray):
                return value.copy()
            return self.xp.asarray(value)

    def synchronize(self) -> None:
        self.stream.synchronize()

    @property
    def blas_threads(self) -> int | None:
        return None


class _HostMemory:
    """The device that a GPU kernel computing on the host sees (TF's HostMemory kernels)."""

    @staticmethod
    def from_host(value: Any) -> Any:
        return value

    @staticmethod
    def to_host(value: Any) -> Any:
        return value


def _integers_on_host(args: tuple, xp: Any) -> bool:
    """Whether every array among ``args`` holds integers and one of them is in host memory."""
    arrays = [a for a in args if isinstance(a, (np.ndarray, xp.ndarray))]
    return any(isinstance(a, np.ndarray) for a in arrays) and \
        all(a.dtype.kind in "iu" for a in arrays)


def _host_view(ctx: Any) -> Any:
    """``ctx`` for a kernel that computes on the host: NumPy, and host memory."""
    view = copy.copy(ctx)
    view.xp, view.device = np, _HostMemory
    return view


def translate_error(e: BaseException, op_name: str, device_name: str) -> Exception | None:
    """CuPy's out-of-memory error as TF's ResourceExhaustedError (None for other errors)."""
    if type(e).__name__ != "OutOfMemoryError":
        return None
    from tfteach.errors import ResourceExhaustedError
    from tfteach.i18n import tr
    return ResourceExhaustedError(
        f"OOM when allocating tensor on {device_name}: {e}\n\t [[Node: {op_name}]]",
        hint=tr("use smaller batches, or raise gpu_options.per_process_gpu_memory_fraction."))
