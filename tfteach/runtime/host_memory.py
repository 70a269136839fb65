"""Host memory: keep freed tensor memory for the next step, as TF's allocators keep a pool.

A step allocates its tensors afresh and frees them when their last reader is done. With
glibc's default malloc settings, a freed block of a megabyte or more goes back to the
operating system at once (mmap'd, or trimmed from the top of the heap), so the next step
page-faults the same memory in again: with eight 1 MiB products alive at once that costs
about a tenth of a 512x512 matmul step on this 2-core machine. TF's allocators keep what they
reserved; here ``keep_freed_memory()`` asks glibc to do the same for blocks up to 32 MiB
(``M_MMAP_THRESHOLD``) and to return memory to the system only when more than 128 MiB sits
free at the top of the heap (``M_TRIM_THRESHOLD``). It runs once, when the first executor or
cluster client (tensors in gRPC messages) is made; on other C libraries (macOS, musl) it
does nothing. ``TFTEACH_HOST_ALLOCATOR=system``
leaves malloc as it is.

State: whether it has run. It changes the whole process (NumPy code outside tfteach keeps
its freed memory too), which is the point: an interactive kernel reuses it.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20

_lock = threading.Lock()
_state = {"done": False, "applied": False}


def keep_freed_memory() -> bool:
    """Apply the settings once (see the module docstring); returns whether glibc took them."""
    with _lock:
        if not _state["done"]:
            _state["done"] = True
            _state["applied"] = _apply()
        return _state["applied"]


def _apply() -> bool:
    if os.environ.get("TFTEACH_HOST_ALLOCATOR", "").lower() == "system":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):   # not glibc: leave the allocator alone
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
