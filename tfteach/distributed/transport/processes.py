"""Task processes on this machine: spawn in their own process group, probe, signal, reap.

Every spawned task gets a daemon thread that waits for it, so no task ever stays a zombie
in the spawning process. State: none beyond those threads.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Mapping, Sequence

from tfteach.devices.host_processes import HAS_PROC, pid_alive


def spawn(argv: Sequence[str], env: Mapping[str, str], log_path: str | os.PathLike) -> int:
    """Start ``argv`` in a new session (its own process group) with stdout and stderr
    appended to ``log_path``; return its pid (= its process group id)."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(list(argv), env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                close_fds=True)
    threading.Thread(target=proc.wait, name=f"tfteach-reap-{proc.pid}", daemon=True).start()
    return proc.pid


def runs(pid: int, argv: Sequence[str]) -> bool:
    """Whether process ``pid`` runs ``argv`` (True where /proc cannot tell: during exec,
    when the kernel briefly shows an empty command line, or without /proc)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:         # gone by now, unless there is no /proc to ask
        return not HAS_PROC
    return not cmdline or cmdline.split(b"\0")[:-1] == [os.fsencode(arg) for arg in argv]


def signal_group(pid: int, signum: int) -> None:
    """Send ``signum`` to the process group led by ``pid`` (no error if it is gone)."""
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def wait_gone(pids: Sequence[int], timeout: float) -> list[int]:
    """Wait up to ``timeout`` s for ``pids`` to die; return those still alive."""
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if pid_alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.01)
        alive = [pid for pid in alive if pid_alive(pid)]
    return alive


def terminate(pids: Sequence[int], grace: float = 3.0) -> None:
    """SIGTERM the process groups of ``pids``; SIGKILL what is left after ``grace`` s."""
    for pid in pids:
        signal_group(pid, signal.SIGTERM)
    for pid in wait_gone(pids, grace):
        signal_group(pid, signal.SIGKILL)
    wait_gone(pids, 2.0)


def kill(pid: int) -> None:
    """SIGKILL the process group of ``pid`` and wait until it is gone."""
    signal_group(pid, signal.SIGKILL)
    wait_gone([pid], 5.0)


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports that are free on ``host`` right now."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
