"""Process exit for everything the cluster layer starts: a script ends as TF's does.

A learner's script may end (last line, uncaught exception, SIGTERM, kernel restart) with
servers, ``grpc://`` sessions and LocalClusters still open. TF's process just exits. Ours
would not by itself: gRPC serves calls on ``concurrent.futures`` pool threads, and at exit
the interpreter joins those threads before any ``atexit`` function runs, so a server
handler waiting on a long-lived stream that its client never closed held the process
forever.

``closing(obj, close)`` registers ``close(obj)`` to run at the start of interpreter shutdown,
ahead of the pool threads' join (``threading``'s own exit hooks run in reverse order of
registration, so ours, registered after ``concurrent.futures``', run first). It runs for
every registered object still alive, in order of ``PRIORITY`` (clients and sessions first,
then servers, then task processes), then the process's shared-memory segments are
released. On SIGTERM, if the program left that signal's default in place, the same closing
runs and the process then dies of SIGTERM, as it would have.
State: ``_registered = {id: (priority, weakref, close)}`` and whether the hooks are in.
Invariant: closing never raises and never waits on a peer; an object closed by its owner
drops out (``forget``).
"""
from __future__ import annotations

import concurrent.futures.thread  # noqa: F401 - its exit hook must be registered before ours
import os
import signal
import threading
import weakref
from typing import Any, Callable

from tfteach.distributed.transport import shm

PRIORITY = {"client": 0, "server": 1, "cluster": 2}
SIGTERM_CLOSE_S = 1.5
_registered: dict[int, tuple[int, weakref.ref, Callable[[Any], None]]] = {}
_lock = threading.RLock()    # the SIGTERM handler may run while the main thread holds it
_hooked = False
_closing = False


def closing(obj: Any, close: Callable[[Any], None], kind: str) -> None:
    """Run ``close(obj)`` at interpreter shutdown or SIGTERM if ``obj`` is still alive."""
    _install_hooks()
    key = id(obj)
    ref = weakref.ref(obj, lambda _ref, key=key: _drop(key, _ref))
    with _lock:
        _registered[key] = (PRIORITY[kind], ref, close)


def forget(obj: Any) -> None:
    """``obj`` was closed by its owner: nothing to do for it at exit."""
    with _lock:
        _registered.pop(id(obj), None)


def close_all() -> None:
    """Close every registered object still alive, clients first; release own segments."""
    global _closing
    with _lock:
        _closing = True
        entries = sorted(_registered.values(), key=lambda entry: entry[0])
        _registered.clear()
    for _priority, ref, close in entries:
        obj = ref()
        if obj is not None:
            try:
                close(obj)
            except Exception:  # noqa: BLE001 - the process is ending: close what still can be
                pass
    shm.release_own()


def _drop(key: int, ref: weakref.ref) -> None:
    with _lock:
        entry = _registered.get(key)
        if entry is not None and entry[1] is ref:
            del _registered[key]


def _install_hooks() -> None:
    global _hooked
    with _lock:
        if _hooked:
            return
        _hooked = True
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is None:
            raise RuntimeError
        register(close_all)
    except RuntimeError:        # shutting down already, or an interpreter without the hook
        import atexit
        atexit.register(close_all)
    _install_sigterm()


def _install_sigterm() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):     # not the main interpreter
        pass


def _on_sigterm(signum: int, _frame: Any) -> None:
    """Close what this process started, then die of SIGTERM as the default would.
    Closing runs on its own thread for at most ``SIGTERM_CLOSE_S``: the handler runs on the
    main thread wherever it was, perhaps holding a lock that closing needs."""
    if not _closing:
        closer = threading.Thread(target=close_all, name="tfteach-sigterm-close", daemon=True)
        closer.start()
        closer.join(SIGTERM_CLOSE_S)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
