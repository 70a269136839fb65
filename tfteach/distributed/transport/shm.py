"""Shared-memory segments for tensors that cross between processes on one host.

A segment is a file ``/dev/shm/tfteach_<creator pid>_<n>_<32 random hex digits>``. The
sender writes the tensor bytes into it and sends only the name over gRPC; the receiver opens
it, unlinks it at once, and copies the bytes out, last ``TAKE_CHUNK_BYTES`` first, cutting
the segment short behind each chunk: its pages are freed as they are copied, so the host
holds a tensor about twice (sender's and receiver's), never three times. A tensor of any
size crosses so (no segment limit: a request's tensor over ``MAX_REUSED_BYTES`` goes in a
segment of its own; the caller releases it when the call ends). Nothing goes through
``multiprocessing.shared_memory``, so Python's resource_tracker never sees (or warns about)
our segments.

State (per process): ``_pending = {name: creation time}`` for segments this process created
and the receiver may not have taken yet.
Invariants: no segment outlives its creator's interest in it:
- the receiver unlinks on open; the sender unlinks pending segments older than ``LINGER_S``
  (a receiver that died), on ``release_own()`` (server stop) and at interpreter exit;
- segments whose creator pid is dead (SIGKILL) are removed by ``sweep_dead()``, which every
  server runs on start and stop and LocalCluster runs after killing or closing tasks, and
  by the server that served the dead process (``shm_callers.watch``).

Reused segments (``ReusedSegment``) are a caller's, kept in a pool and used call after
call, for tensors of ``SEGMENT_MIN_BYTES`` or more: the caller writes a request's large
tensors into one (RunStep feeds, RunGraph sends), and offers another in RunGraph requests,
into which the answering task writes the answer's large tensors. The other side keeps a
mapping of each (``mapped``) and copies the tensors out. Making a segment costs a page fault
per 4 KiB page on both sides (1.3 ms per MiB here); a reused one costs two copies. A caller
gives a segment back to its pool only after a successful answer (so no late reader or
writer can touch it again), and unlinks its segments on ``release_own()``;
``sweep_dead()`` covers a killed caller. A segment whose answer is handed on as an array
over it (``lend``: a pulled tensor, no copy out) returns to the pool once that array and
every view of it are freed.

Who may use which segment (a server maps names its callers send, so it checks them):
- Same host, and which process a call comes from, are the server's findings, not the
  caller's word (``shm_callers.Caller``); a caller may name only its own segments, a name
  ``tfteach_<pid>_...`` of process ``pid`` (``check_owner``); any other name is
  PermissionDeniedError (InvalidArgumentError if it is no segment name at all).
- Every segment is opened with O_NOFOLLOW (a symbolic link is refused) and O_NONBLOCK (a
  FIFO cannot block us), and must then be a regular file with one link, owned by this
  process's uid, of mode 0600 and of a size a segment can have; else PermissionDeniedError.
A mapping is kept by name (``KEEP_MAPPED``), so a call that reuses a segment costs no
system call beyond the caller check's readlink (``shm_callers``).
"""
from __future__ import annotations

import atexit
import itertools
import mmap
import os
import re
import secrets
import socket
import stat
import threading
import time
import weakref
from collections import OrderedDict, deque
from pathlib import Path

from tfteach import errors
from tfteach.devices.host_processes import PID_MAX, pid_alive
from tfteach.i18n import tr

SHM_DIR = Path("/dev/shm")
PREFIX = "tfteach_"
THRESHOLD_BYTES = 1 << 20       # tensors at least this big go through a segment of their own
SEGMENT_MIN_BYTES = 64 << 10    # ... and this big through a reused segment (a 64 KiB gRPC
                                # payload adds 60 us to a call here; two copies cost 10 us)
LINGER_S = 60.0                 # a segment not taken after this long is the sender's to drop
MAX_REUSED_BYTES = 256 << 20    # larger requests and answers use a segment per tensor
TAKE_CHUNK_BYTES = 64 << 20     # a taken segment is freed behind each chunk copied out
KEEP_REUSED = 8                 # free reused segments a process keeps
KEEP_MAPPED = 8                 # other processes' reused segments a process keeps mapped
RANDOM_BYTES = 16               # of a segment's name: nobody can guess a name to plant it

_NAME = re.compile(rf"^tfteach_([1-9][0-9]{{0,9}})_[0-9]{{1,20}}_[0-9a-f]{{{2 * RANDOM_BYTES}}}$")
_ANY_NAME = re.compile(r"^tfteach_([1-9][0-9]{0,9})_")  # what sweeping removes (older names too)
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_lock = threading.Lock()
_pending: dict[str, float] = {}
_counter = itertools.count()
_host_key: str | None = None
_available: bool | None = None
_free: list["ReusedSegment"] = []
_reused: "weakref.WeakSet[ReusedSegment]" = weakref.WeakSet()     # every live one
_mapped: "OrderedDict[str, memoryview]" = OrderedDict()
_returned: deque = deque()      # lent segments whose arrays were freed (``lend``)


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
    name = _new_name()
    fd = _create(name)
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
        raise errors.DataLossError(f"Invalid shared-memory segment name {name[:100]!r}")
    opened = _open(name, os.O_RDWR)     # read, and cut short as it is read
    if opened is None:
        raise errors.DataLossError(
            f"Shared-memory segment {name} is gone before the receiver could read it",
            hint=tr("The sending task probably stopped or was killed mid-transfer; rerun "
                    "the step once it is back.")) from None
    fd, size = opened
    _unlink(name)
    try:
        if size != nbytes:
            raise errors.DataLossError(f"Shared-memory segment {name} does not hold "
                                       f"{nbytes} bytes")
        _copy_out(fd, name, into[:nbytes])
    finally:
        os.close(fd)


def _copy_out(fd: int, name: str, into: memoryview) -> None:
    """Copy segment ``fd`` (unlinked) into ``into``, last chunk first, truncating the
    segment behind each chunk so that its pages are freed as they are copied."""
    end = len(into)
    while end > 0:
        start = done = max(0, end - TAKE_CHUNK_BYTES)
        while done < end:
            got = os.preadv(fd, [into[done:end]], done)
            if not got:
                raise errors.DataLossError(f"Shared-memory segment {name} ended early")
            done += got
        os.ftruncate(fd, start)
        end = start


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
        for segment in reused:
            segment.unlinked = True
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
        self.name = _new_name()
        fd = _create(self.name)
        try:
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
        except BaseException:
            _unlink(self.name)
            raise
        finally:
            os.close(fd)
        self.view = memoryview(self._map)
        self.lent = self.unlinked = False
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
        while _returned:
            back = _returned.popleft()
            back.lent = False
            if not back.unlinked:   # not released (``release_own``) while lent
                _free.append(back)
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
    close it. A lent segment (``lend``) returns when its array is freed."""
    if segment is None or segment.lent:
        return
    dropped = segment
    if reuse and not segment.unlinked:
        with _lock:
            _free.append(segment)
            dropped = None
            if len(_free) > KEEP_REUSED:
                dropped = min(_free, key=lambda r: r.size)
                _free.remove(dropped)
    if dropped is not None:
        dropped.close()


def lend(segment: ReusedSegment, owner: object) -> None:
    """Hand ``segment`` on with ``owner``, the buffer an array over it holds (and every
    view of that array): the segment returns to the pool once ``owner`` is freed, so
    nothing writes into it while the array lives. (Queued, not given back at once: the
    last reference may drop anywhere, even under ``_lock``.)"""
    segment.lent = True
    weakref.finalize(owner, _returned.append, segment).atexit = False


def mapped(name: str, nbytes: int, owner: int) -> memoryview | None:
    """A mapping of process ``owner``'s reused segment ``name`` (kept for its next call),
    or None if there is no such segment of at least ``nbytes``. Raises
    PermissionDeniedError for a segment that is not ``owner``'s or fails the checks of the
    module docstring."""
    check_owner(name, owner)
    with _lock:
        view = _mapped.get(name)
        if view is not None:
            _mapped.move_to_end(name)
            return view if len(view) >= nbytes else None
    opened = _open(name, os.O_RDWR)
    if opened is None:
        return None
    fd, size = opened
    try:
        if size > MAX_REUSED_BYTES:
            raise _refused(name, f"holds {size} bytes, more than a reused segment can")
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


def creator_pid(name: str) -> int:
    """The creator pid in a valid segment name (0 for anything else)."""
    match = _NAME.match(name)
    return int(match.group(1)) if match else 0


def check_owner(name: str, owner: int) -> None:
    """Raise unless ``name`` is a segment name of process ``owner``: InvalidArgumentError
    for no segment name at all, PermissionDeniedError for another process's segment."""
    match = _NAME.match(name)
    if match is None:
        raise errors.InvalidArgumentError(
            f"Invalid shared-memory segment name {name[:100]!r}", hint=refused_hint())
    if int(match.group(1)) != owner:
        raise errors.PermissionDeniedError(
            f"Shared-memory segment {name} belongs to process {match.group(1)}, not to the "
            f"calling process {owner}", hint=refused_hint())


def refused_hint() -> str:
    """What to do about a shared-memory segment that a task refused."""
    return tr("tfteach segments are files that the processes of one user create in /dev/shm "
              "with mode 0600. A caller may only send the names of segments it created "
              "itself; remove whatever else uses a tfteach_ name there.")


def owner_pid(name: str) -> int | None:
    """The creator pid encoded in a segment name (``None`` for a foreign name or pid)."""
    pid = int(match.group(1)) if (match := _ANY_NAME.match(name)) else 0
    return pid if 0 < pid <= PID_MAX else None


def list_segments() -> list[str]:
    """Names of all tfteach segments in /dev/shm (of every process)."""
    try:        # (no /dev/shm: FileNotFoundError)
        return sorted(name for name in os.listdir(SHM_DIR) if owner_pid(name))
    except OSError:
        return []


def sweep_dead() -> list[str]:
    """Remove this uid's segments (regular files) whose creator is dead; return them."""
    removed = []
    for pid in sorted({owner_pid(name) for name in list_segments() if _ours(name)}):
        if pid and not pid_alive(pid):
            removed += reclaim(pid)
    return removed


def reclaim(pid: int) -> list[str]:
    """Remove the segments of (dead) process ``pid`` that belong to our uid, and drop our
    mappings of them; return the names removed."""
    names = [name for name in list_segments() if owner_pid(name) == pid]
    with _lock:
        for name in [name for name in _mapped if owner_pid(name) == pid]:
            del _mapped[name]       # unmapped once no tensor being copied holds it
    return [name for name in names if _unlink_own(name)]


def _new_name() -> str:
    return f"{PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(RANDOM_BYTES)}"


def _create(name: str) -> int:
    """A new segment ``name``, open for reading and writing, mode 0600 whatever the umask."""
    fd = os.open(SHM_DIR / name, os.O_CREAT | os.O_EXCL | os.O_RDWR | _OPEN_FLAGS, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        _unlink(name)
        raise
    return fd


def _open(name: str, flags: int) -> tuple[int, int] | None:
    """``(fd, size)`` of segment ``name`` (a validated name) once it passes the checks of
    the module docstring; None if there is none; PermissionDeniedError if it fails them."""
    try:
        fd = os.open(SHM_DIR / name, flags | _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:          # ELOOP: a symbolic link
        raise _refused(name, f"cannot be opened safely ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        problem = _problem(info)
        if problem:
            raise _refused(name, problem)
    except BaseException:
        os.close(fd)
        raise
    return fd, info.st_size


def _problem(info: os.stat_result) -> str:
    """What is wrong with a segment's ``fstat`` (\"\" if nothing)."""
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    if info.st_uid != os.geteuid():
        return f"is owned by uid {info.st_uid}, not by this process's uid {os.geteuid()}"
    if stat.S_IMODE(info.st_mode) != 0o600:
        return f"has mode {stat.S_IMODE(info.st_mode):o}, not 600"
    if info.st_nlink != 1:
        return f"has {info.st_nlink} links, not 1"
    return ""


def _refused(name: str, why: str) -> errors.PermissionDeniedError:
    return errors.PermissionDeniedError(f"Refusing shared-memory segment {name}: it {why}",
                                        hint=refused_hint())


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


def _ours(name: str) -> bool:
    """Whether ``name`` in /dev/shm is a regular file of our uid (not a link, not another's)."""
    try:
        info = os.lstat(SHM_DIR / name)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid()


def _unlink_own(name: str) -> bool:
    """Unlink ``name`` if our uid owns it (not another user's); whether it was removed."""
    try:
        if os.lstat(SHM_DIR / name).st_uid != os.geteuid():
            return False
        os.unlink(SHM_DIR / name)
    except OSError:
        return False
    return True


atexit.register(release_own)
