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

Reused segments (``ReusedSegment``) are a caller's, kept in a pool and used call after
call, for tensors of ``SEGMENT_MIN_BYTES`` or more: the caller writes a request's large
tensors into one (RunStep feeds, RunGraph sends), and offers another in RunGraph requests,
into which the answering task writes the answer's large tensors. The other side keeps a
mapping of each (``mapped``) and copies the tensors out. Making a segment costs a page fault
per 4 KiB page on both sides (1.3 ms per MiB here); a reused one costs two copies. A caller
gives a segment back to its pool only after a successful answer (so no late reader or
writer can touch it again), and unlinks its segments on ``release_own()``;
``sweep_dead()`` covers a killed caller.
"""
from __future__ import annotations

import atexit
import itertools
import mmap
import os
import re
import secrets
import socket
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path

from tfteach import errors

from .processes import pid_alive

SHM_DIR = Path("/dev/shm")
PREFIX = "tfteach_"
THRESHOLD_BYTES = 1 << 20       # tensors at least this big go through a segment of their own
SEGMENT_MIN_BYTES = 64 << 10    # ... and this big through a reused segment (a 64 KiB gRPC
                                # payload adds 60 us to a call here; two copies cost 10 us)
LINGER_S = 60.0                 # a segment not taken after this long is the sender's to drop
MAX_REUSED_BYTES = 256 << 20    # larger requests and answers use a segment per tensor
KEEP_REUSED = 8                 # free reused segments a process keeps
KEEP_MAPPED = 8                 # other processes' reused segments a process keeps mapped

_NAME = re.compile(r"^tfteach_(\d+)_\d+_[0-9a-f]+$")
_lock = threading.Lock()
_pending: dict[str, float] = {}
_counter = itertools.count()
_host_key: str | None = None
_available: bool | None = None
_free: list["ReusedSegment"] = []
_reused: "weakref.WeakSet[ReusedSegment]" = weakref.WeakSet()     # every live one
_mapped: "OrderedDict[str, memoryview]" = OrderedDict()


def available() -> bool:
    """Whether this host has a writable ``/dev/shm`` (Linux; checked once per process)."""
    global _available
    if _available is None:
        _available = SHM_DIR.is_dir() and os.access(SHM_DIR, os.W_OK)
    return _available


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
    """Remove every segment this process created and nobody took yet, and its reused
    segments."""
    with _lock:
        names = list(_pending)
        reused, _free[:] = list(_reused), []
        _mapped.clear()     # unmapped once no tensor being copied holds them
    for name in names:
        release(name)
    for segment in reused:  # unlinked; one in use stays mapped until its call ends
        _unlink(segment.name)


class ReusedSegment:
    """A shared-memory segment of this process's, mapped, used call after call for
    requests' or answers' large tensors (module docstring)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.name = f"{PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}"
        fd = os.open(SHM_DIR / self.name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
        except BaseException:
            _unlink(self.name)
            raise
        finally:
            os.close(fd)
        self.view = memoryview(self._map)
        _reused.add(self)

    def __repr__(self) -> str:
        return f"ReusedSegment({self.name!r}, size={self.size})"

    def close(self) -> None:
        """Unlink and unmap the segment (it is not reused)."""
        _unlink(self.name)
        self.view.release()
        self._map.close()


def reused_segment(nbytes: int) -> ReusedSegment | None:
    """A free reused segment of at least ``nbytes`` (made if none is free); None when
    ``nbytes`` is 0 or over MAX_REUSED_BYTES, or /dev/shm is not usable."""
    if not 0 < nbytes <= MAX_REUSED_BYTES or not available():
        return None
    with _lock:
        fits = [r for r in _free if r.size >= nbytes]
        if fits:
            best = min(fits, key=lambda r: r.size)
            _free.remove(best)
            return best
    try:
        return ReusedSegment(max(THRESHOLD_BYTES, 1 << (nbytes - 1).bit_length()))
    except OSError:
        return None


def give_back(segment: ReusedSegment | None, reuse: bool = True) -> None:
    """Return a reused segment to the pool (``reuse``: its call's answer arrived) or
    close it."""
    if segment is None:
        return
    dropped = segment
    if reuse:
        with _lock:
            _free.append(segment)
            dropped = None
            if len(_free) > KEEP_REUSED:
                dropped = min(_free, key=lambda r: r.size)
                _free.remove(dropped)
    if dropped is not None:
        dropped.close()


def mapped(name: str, nbytes: int) -> memoryview | None:
    """A mapping of another process's reused segment ``name`` (kept for its next call),
    or None if it is no reused segment of at least ``nbytes``."""
    if not _NAME.match(name):
        return None
    with _lock:
        view = _mapped.get(name)
        if view is not None:
            _mapped.move_to_end(name)
            return view if len(view) >= nbytes else None
    try:
        fd = os.open(SHM_DIR / name, os.O_RDWR)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size < nbytes:
            return None
        view = memoryview(mmap.mmap(fd, size))
    finally:
        os.close(fd)
    with _lock:
        _mapped[name] = view
        while len(_mapped) > KEEP_MAPPED:     # unmapped once no writer holds it
            _mapped.popitem(last=False)
    return view


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
