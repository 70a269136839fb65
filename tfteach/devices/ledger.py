"""Virtual GPU memory shared between processes: one ledger file per virtual GPU in a folder.

A real GPU's memory is one pool for every process on the machine. TF's allocator for a GPU
(the BFC allocator, bfc_allocator.cc ``Extend``) takes a region with cudaMalloc when the
device starts (its whole limit, or 1 MiB with ``allow_growth``) and more as tensors need it.
When cudaMalloc fails, CUDA's driver wrapper logs ``failed to allocate 409.60MiB (429496729
bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory`` and the allocator backs off,
once in its life, retrying at 0.9 of the size until a region fits or is smaller than the
request. Ops that need more than the region it got then fail with OOM.

Virtual GPUs model this only between processes that name the same folder in the environment
variable ``TFTEACH_GPU_LEDGER`` (processes without it, such as a local cluster's tasks,
each have GPUs of their own). ``gpu<N>.json`` maps each process id to the bytes it holds on
virtual GPU N; ``gpu<N>.lock`` (an fcntl lock) guards it. State: this process's ``Region``s.
Invariant: a process's claim ends with it (at exit; a dead or zombie process's claim is
ignored and dropped by the next process that reads the ledger).
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import sys
import threading
from typing import Iterator

from tfteach.devices.host_processes import pid_alive

ENV = "TFTEACH_GPU_LEDGER"
BACKPEDAL = 0.9          # TF's kBackpedalFactor
MIN_ALLOCATION = 256     # TF's kMinAllocationSize: region sizes are multiples of it

logger = logging.getLogger("tfteach.devices")
_regions: list["Region"] = []
_lock = threading.Lock()


def folder() -> str | None:
    """The ledger folder named by ``TFTEACH_GPU_LEDGER`` (None: GPUs are this process's own)."""
    return os.environ.get(ENV) or None


class Region:
    """The memory this process holds on one shared virtual GPU."""

    def __init__(self, path: str, physical_index: int, total: int) -> None:
        os.makedirs(path, exist_ok=True)
        self.file = os.path.join(path, f"gpu{physical_index}.json")
        self.total = int(total)
        self.held = 0
        self.backpedaled = False
        with _lock:
            _regions.append(self)

    def grow(self, want: int, need: int) -> int:
        """Hold ``want`` bytes in all (at least ``need``): TF's ``Extend``. Returns what is
        held afterwards (unchanged when the GPU has not ``need - held`` bytes free)."""
        least = need - self.held
        extra = max((want - self.held) // MIN_ALLOCATION * MIN_ALLOCATION, _rounded(least))
        with self._claims() as claims:
            free = self.total - sum(b for pid, b in claims.items() if pid != str(os.getpid()))
            free -= self.held
            first = extra
            while extra > free:
                _log_failed(extra)
                smaller = _rounded(int(extra * BACKPEDAL))
                once, self.backpedaled = self.backpedaled, True
                if (once and extra == first) or smaller >= extra or smaller < least:
                    return self.held
                extra = smaller
            self.held += extra
            claims[str(os.getpid())] = self.held
        return self.held

    def release(self) -> None:
        """Give this process's memory back (at exit, or when its GPUs are reset)."""
        if self.held:
            with self._claims() as claims:
                claims.pop(str(os.getpid()), None)
            self.held = 0

    @contextlib.contextmanager
    def _claims(self) -> Iterator[dict]:
        with open(self.file[:-len(".json")] + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                claims = _read(self.file)
                yield claims
                _write(self.file, claims)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def release_all() -> None:
    """Release every region of this process (its GPUs start afresh)."""
    with _lock:
        regions = list(_regions)
        _regions.clear()
    for region in regions:
        region.release()


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            claims = json.load(f)
    except (OSError, ValueError):
        return {}
    return {pid: int(b) for pid, b in claims.items() if pid_alive(int(pid))}


def _write(path: str, claims: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(claims, f)
    os.replace(tmp, path)


def _rounded(nbytes: int) -> int:
    return max(0, -(-int(nbytes) // MIN_ALLOCATION) * MIN_ALLOCATION)


def human_bytes(nbytes: int) -> str:
    """TF's ``HumanReadableNumBytes``: 429496729 -> ``409.60MiB``."""
    if nbytes < 1024:
        return f"{nbytes}B"
    value, unit = nbytes, 0
    while value >= 1024 * 1024:
        value //= 1024
        unit += 1
    return f"{value / 1024.0:.1f}KiB" if unit == 0 else f"{value / 1024.0:.2f}{'KMGTPE'[unit]}iB"


def _log_failed(nbytes: int) -> None:
    message = (f"failed to allocate {human_bytes(nbytes)} ({nbytes} bytes) from device: "
               "CUDA_ERROR_OUT_OF_MEMORY: out of memory")
    if logger.hasHandlers():
        logger.error(message)
    else:
        print(f"E tfteach] {message}", file=sys.stderr, flush=True)


atexit.register(release_all)
