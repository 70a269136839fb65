"""Shared-memory segments for tensors that cross between processes on one host.

A segment is a file ``/dev/shm/tfteach_<creator pid>_<n>_<random>``. The sender writes the
tensor bytes into it and sends only the name over gRPC; the receiver opens it, unlinks it at
once, and copies the bytes out. Nothing goes through ``multiprocessing.shared_memory``, so
Python's resource_tracker never sees (or warns about) our segments.

State (per process): ``_pending = {name: creation time}`` for segments this process created
and the receiver may not have taken yet.
Invariants: no segment outlives its creator's interest in it:
- the receiver unlinks on open; the sender unlinks pending segments older than ``LINGER_S``
  (a receiver that died), on ``release_own()`` (server stop) and at interpreter exit;
- segments whose creator pid is dead (SIGKILL) are removed by ``sweep_dead()``, which every
  server runs on start and LocalCluster runs after killing or closing tasks.
"""
from __future__ import annotations

import atexit
import itertools
import os
import re
import secrets
import socket
import threading
import time
from pathlib import Path

from tfteach import errors

from .processes import pid_alive

SHM_DIR = Path("/dev/shm")
PREFIX = "tfteach_"
THRESHOLD_BYTES = 1 << 20       # tensors at least this big go through shared memory
LINGER_S = 60.0                 # a segment not taken after this long is the sender's to drop

_NAME = re.compile(r"^tfteach_(\d+)_\d+_[0-9a-f]+$")
_lock = threading.Lock()
_pending: dict[str, float] = {}
_counter = itertools.count()
_host_key: str | None = None


def available() -> bool:
    """Whether this host has a writable ``/dev/shm`` (Linux)."""
    return SHM_DIR.is_dir() and os.access(SHM_DIR, os.W_OK)


def host_key() -> str:
    """Identifies this host's shared-memory namespace: hostname, boot id and /dev/shm device."""
    global _host_key
    if _host_key is None:
        try:
            boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        except OSError:
            boot_id = "?"
        device = SHM_DIR.stat().st_dev if available() else -1
        _host_key = f"{socket.gethostname()}/{boot_id}/{device}"
    return _host_key


def export(data: memoryview) -> str:
    """Copy ``data`` (a flat byte view) into a new segment; return the segment's name."""
    _drop_stale()
    name = f"{PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}"
    fd = os.open(SHM_DIR / name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    with _lock:
        _pending[name] = time.monotonic()
    try:
        with os.fdopen(fd, "wb", buffering=0) as handle:
            view = data.cast("B") if data.format != "B" else data
            written = 0
            while written < len(view):
                written += handle.write(view[written:])
    except BaseException:
        release(name)
        raise
    return name


def take(name: str, nbytes: int, into: memoryview) -> None:
    """Read segment ``name`` (``nbytes`` long) into ``into`` and remove the segment."""
    if not _NAME.match(name):
        raise errors.DataLossError(f"Invalid shared-memory segment name {name!r}")
    try:
        fd = os.open(SHM_DIR / name, os.O_RDONLY)
    except FileNotFoundError:
        raise errors.DataLossError(
            f"Shared-memory segment {name} is gone before the receiver could read it",
            hint="The sending task probably stopped or was killed mid-transfer; rerun the "
                 "step once it is back.") from None
    _unlink(name)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        if os.fstat(handle.fileno()).st_size != nbytes:
            raise errors.DataLossError(f"Shared-memory segment {name} does not hold "
                                       f"{nbytes} bytes")
        done = 0
        while done < nbytes:
            got = handle.readinto(into[done:])
            if not got:
                raise errors.DataLossError(f"Shared-memory segment {name} ended early")
            done += got


def release(name: str) -> None:
    """Remove a segment this process created (no error if it is already gone)."""
    with _lock:
        _pending.pop(name, None)
    _unlink(name)


def release_own() -> None:
    """Remove every segment this process created and nobody took yet."""
    with _lock:
        names = list(_pending)
    for name in names:
        release(name)


def owner_pid(name: str) -> int | None:
    """The creator pid encoded in a segment name (``None`` for a foreign name)."""
    match = _NAME.match(name)
    return int(match.group(1)) if match else None


def list_segments() -> list[str]:
    """Names of all tfteach segments in /dev/shm (of every process)."""
    if not available():
        return []
    return sorted(entry.name for entry in SHM_DIR.iterdir() if owner_pid(entry.name))


def sweep_dead() -> list[str]:
    """Remove segments whose creator process is dead; return their names."""
    removed = []
    for name in list_segments():
        pid = owner_pid(name)
        if pid is not None and not pid_alive(pid):
            _unlink(name)
            removed.append(name)
    return removed


def _drop_stale() -> None:
    now = time.monotonic()
    with _lock:
        stale = [name for name, born in _pending.items() if now - born > LINGER_S]
        gone = [name for name in _pending if name not in stale
                and not (SHM_DIR / name).exists()]
        for name in gone:
            del _pending[name]
    for name in stale:
        release(name)


def _unlink(name: str) -> None:
    try:
        os.unlink(SHM_DIR / name)
    except FileNotFoundError:
        pass


atexit.register(release_own)
