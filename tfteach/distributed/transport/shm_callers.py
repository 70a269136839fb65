"""Who is calling, as far as shared memory goes: ``Caller``, and reclaiming after it dies.

A server maps segment names that its callers send, so it checks who sends them:
- Same host is the server's finding, not the caller's word: a ``Caller`` shares this host's
  /dev/shm only if its claim (``shm_host``) is our ``shm.host_key()`` AND its connection
  comes from this host (``local_peer.is_local``: loopback, or an address this host owns).
- A caller may name only its own segments (reused ones, and those of a request's tensors
  of their own, which the server takes): a name ``tfteach_<pid>_...`` is mapped for a
  call only if process ``pid`` holds the client end of that call's connection (found in
  /proc by ``local_peer.socket_fd``, checked once per stream or call, and re-checked with
  one readlink for a later call: ``_verified``) and runs under the server's uid.
- When a call or stream of a ``Caller`` ends, its pids are watched for ``REAP_WAIT_S``
  (``watch``, one reaper thread) and a dead one's segments are reclaimed
  (``shm.reclaim``): a killed client leaves none behind while its server runs.
State: ``_verified``, ``_watched`` and the reaper thread, guarded by ``_lock``.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Iterable

from tfteach import errors
from tfteach.distributed.transport import peer_identity as local_peer
from tfteach.distributed.transport import shm
from tfteach.distributed.transport.processes import pid_alive

REAP_WAIT_S = 5.0               # how long a caller whose call ended is watched for its death
REAP_POLL_S = 0.1
KEEP_CALLERS = 256              # verified (connection, pid) pairs remembered

_lock = threading.Lock()
_verified: dict[tuple[str, int], tuple[str, str]] = {}   # (peer, pid) -> its socket's fd
_watched: dict[int, float] = {}                          # pid -> watched until (monotonic)
_reaper: threading.Thread | None = None


class Caller:
    """The process at the other end of one gRPC call or stream (``context.peer()``), as far
    as shared memory goes (module docstring); ``close()`` it when the call ends."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self._local: bool | None = None
        self._pids: set[int] = set()    # verified to hold this call's connection

    @classmethod
    def trusting(cls, pid: int) -> "Caller":
        """A caller already known to be process ``pid`` of this host (no connection)."""
        caller = cls("")
        caller._local, caller._pids = True, {pid}
        return caller

    def __repr__(self) -> str:
        return f"Caller({self.peer!r}, pids={sorted(self._pids)})"

    def shares_host(self, claim: str) -> bool:
        """Whether the caller, claiming host key ``claim``, shares this host's /dev/shm."""
        if not claim or claim != shm.host_key() or not shm.available():
            return False
        if self._local is None:
            self._local = local_peer.is_local(self.peer)
        return self._local

    def owner_of(self, name: str) -> int:
        """The pid in segment name ``name``, once it is known to be the caller's process;
        PermissionDeniedError (naming the segment) if it is not."""
        pid = shm.creator_pid(name)
        if pid and pid not in self._pids:
            if not self._local or not _holds(self.peer, pid):
                raise errors.PermissionDeniedError(
                    f"Shared-memory segment {name} is not the caller's: process {pid} does "
                    f"not hold the connection {self.peer or '?'}", hint=shm.refused_hint())
            self._pids.add(pid)
        shm.check_owner(name, pid)
        return pid

    def close(self) -> None:
        """The call ended: reclaim the segments of its process if that dies soon."""
        watch(self._pids)


def _holds(peer: str, pid: int) -> bool:
    """Whether process ``pid``, of our uid, holds the client end of connection ``peer``
    (remembered; a remembered answer costs one readlink)."""
    with _lock:
        known = _verified.get((peer, pid))
    if known is not None:
        try:
            if os.readlink(known[0]) == known[1]:
                return True
        except OSError:
            pass
    try:
        ours = os.stat(f"/proc/{pid}").st_uid == os.geteuid()
    except OSError:
        ours = False
    found = local_peer.socket_fd(peer, pid) if ours else None
    with _lock:
        if len(_verified) >= KEEP_CALLERS:
            _verified.clear()
        if found is None:
            _verified.pop((peer, pid), None)
        else:
            _verified[(peer, pid)] = found
    return found is not None


def watch(pids: Iterable[int]) -> None:
    """Reclaim the segments of those of ``pids`` that die within ``REAP_WAIT_S`` (callers
    whose call or stream just ended: a killed one leaves its segments behind)."""
    global _reaper
    until = time.monotonic() + REAP_WAIT_S
    with _lock:
        for pid in pids:
            if pid != os.getpid():
                _watched[pid] = until
        if _watched and (_reaper is None or not _reaper.is_alive()):
            _reaper = threading.Thread(target=_reap_watched, name="tfteach-shm-reaper",
                                       daemon=True)
            _reaper.start()


def _reap_watched() -> None:
    """The reaper thread: polls the watched pids until none is left."""
    global _reaper
    while True:
        time.sleep(REAP_POLL_S)
        with _lock:
            if not _watched:
                _reaper = None
                return
            watched, now = list(_watched.items()), time.monotonic()
        for pid, until in watched:
            dead = not pid_alive(pid)
            if dead:
                shm.reclaim(pid)
            if dead or now > until:
                with _lock:
                    if _watched.get(pid) == until:
                        del _watched[pid]
