"""BLAS threads: a virtual GPU computes with one core, as a separate device would.

NumPy's BLAS uses every core by default. When a plan runs expensive kernels on virtual GPUs,
BLAS is switched to one thread, so two virtual GPUs really compute in parallel on two cores
instead of fighting over them; a plan with expensive kernels on real CPU devices only switches
it back to the library's default. The setting changes only when a plan needs the other one
(threadpoolctl calls cost tens of microseconds), so it stays as the last such plan left it:
NumPy code outside tfteach then runs with that setting too. ``restore_default()`` puts the
library default back. The controller is created once (it scans the loaded libraries).
"""
from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {"controller": None, "loaded": False, "limiter": None}


def _controller() -> Any:
    if not _state["loaded"]:
        _state["loaded"] = True
        try:
            from threadpoolctl import ThreadpoolController
            _state["controller"] = ThreadpoolController()
        except Exception:  # noqa: BLE001 (no threadpoolctl: leave BLAS alone)
            _state["controller"] = None
    return _state["controller"]


def one_thread() -> None:
    """Switch BLAS to one thread (no-op if it already is)."""
    with _lock:
        ctl = _controller()
        if ctl is not None and _state["limiter"] is None:
            _state["limiter"] = ctl.limit(limits=1, user_api="blas")


def restore_default() -> None:
    """Give BLAS its default thread count back (no-op if it has it)."""
    with _lock:
        limiter, _state["limiter"] = _state["limiter"], None
        if limiter is not None:
            limiter.restore_original_limits()


def prepare_for(plan: Any) -> None:
    """Put BLAS in the mode ``plan`` needs, before it runs (see the module docstring)."""
    if plan.uses_virtual_blas:
        if _state["limiter"] is None:
            one_thread()
    elif plan.uses_cpu_blas and _state["limiter"] is not None:
        restore_default()
