"""BLAS threads per step: a virtual GPU computes with one core, as a separate device would.

NumPy's BLAS uses every core by default. When a plan runs expensive kernels on virtual GPUs,
the step runs with one BLAS thread, so two virtual GPUs really compute in parallel on two
cores instead of fighting over them. Plans on the CPU alone keep the library default.
The controller is created once (threadpoolctl scans the loaded libraries, which is slow).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

_controller: list = []
_lock = threading.Lock()
_depth = [0]


def _get() -> Any:
    if not _controller:
        try:
            from threadpoolctl import ThreadpoolController
            _controller.append(ThreadpoolController())
        except Exception:  # noqa: BLE001 (no threadpoolctl: leave BLAS alone)
            _controller.append(None)
    return _controller[0]


@contextlib.contextmanager
def limit_for(plan: Any) -> Iterator[None]:
    """One BLAS thread while ``plan`` runs if it computes on virtual GPUs; else nothing."""
    if not plan.uses_virtual_blas:
        yield
        return
    ctl = _get()
    if ctl is None:
        yield
        return
    with _lock:
        _depth[0] += 1
        limiter = ctl.limit(limits=1, user_api="blas") if _depth[0] == 1 else None
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if limiter is not None:
                limiter.restore_original_limits()
