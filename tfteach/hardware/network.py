"""A modelled network between a live cluster's tasks: which link, and when each transfer ends.

``network_link(spec)`` names the link between tasks that ``LocalCluster(network=spec)``
models: a shipped profile's name (its ``network``, the link between its hosts), a link's
name from ``NETWORKS`` ("1 Gbit Ethernet" ... "InfiniBand EDR (100 Gbit)"), a
``MachineProfile`` or ``LinkProfile``, or a profile file written by ``calibrate --save``.

``LinkLedger`` is the link's state, shared by every task process of one cluster through a
small file: for each task, when its sending end and its receiving end are next free
(``time.monotonic()`` seconds, one clock for every process of the machine). A transfer
holds the sender's and the receiver's end for ``latency + bytes / bandwidth``, as in the
schedule ``predict`` draws (each task is a host of its own, with one network port), so
transfers through one task's port queue behind each other while transfers between other
pairs overlap.

State: the file (``2 * len(tasks)`` little-endian doubles: sending ends, then receiving
ends), read and written under ``flock``. Invariant: an end's free time never goes back.
"""
from __future__ import annotations

import fcntl
import os
import struct
import time
from pathlib import Path
from typing import Any, Sequence

from tfteach.errors import InvalidArgumentError
from tfteach.hardware import profiles
from tfteach.hardware.profiles import LinkProfile, MachineProfile
from tfteach.i18n import tr

# Links between hosts (task <-> task), by name.
NETWORKS: dict[str, LinkProfile] = {link.name: link for link in (
    profiles.ETH_1G, profiles.ETH_10G, profiles.ETH_25G, profiles.ETH_100G, profiles.IB_EDR)}


def network_link(spec: Any) -> LinkProfile:
    """The task <-> task link ``spec`` names; InvalidArgumentError listing the known names."""
    if isinstance(spec, LinkProfile):
        return spec
    if isinstance(spec, MachineProfile):
        return spec.network
    if isinstance(spec, str) and spec in NETWORKS:
        return NETWORKS[spec]
    if isinstance(spec, str) and (spec in profiles.SHIPPED or Path(spec).is_file()):
        return profiles.get(spec).network
    known = ", ".join(repr(n) for n in [*profiles.SHIPPED, *NETWORKS])
    raise InvalidArgumentError(
        f"Unknown network {spec!r}. Known networks: {known}.",
        hint=tr("pass network= one of the names listed, a tfteach.hardware profile or link, "
                "or a profile file written by `python -m tfteach.hardware calibrate --save "
                "FILE`."))


class LinkLedger:
    """When each task's sending and receiving ends of one modelled link are free."""

    def __init__(self, path: str | Path, tasks: Sequence[str], link: LinkProfile) -> None:
        self.path = Path(path)
        self.tasks = {name: i for i, name in enumerate(tasks)}
        self.link = link
        self._fd: int | None = None

    @staticmethod
    def create(path: str | Path, tasks: Sequence[str], link: LinkProfile) -> "LinkLedger":
        """A new ledger file with every end free now."""
        Path(path).write_bytes(struct.pack(f"<{2 * len(tasks)}d", *[0.0] * (2 * len(tasks))))
        return LinkLedger(path, tasks, link)

    def claim(self, src: str, dst: str, nbytes: int, now: float | None = None
              ) -> tuple[float, float]:
        """Book a transfer of ``nbytes`` from task ``src`` to task ``dst`` ready at ``now``
        (default: this moment); returns its modelled (start, end) in monotonic seconds."""
        now = time.monotonic() if now is None else now
        ends = (self.tasks[src], len(self.tasks) + self.tasks[dst])
        fd = self._open()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            free = [self._read(fd, i) for i in ends]
            start = max([now] + free)
            end = start + self.link.time(nbytes)
            for i in ends:
                os.pwrite(fd, struct.pack("<d", end), 8 * i)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return start, end

    def free_at(self, task: str) -> tuple[float, float]:
        """When ``task``'s sending and receiving ends are next free (monotonic seconds)."""
        fd = self._open()
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            i = self.tasks[task]
            return self._read(fd, i), self._read(fd, len(self.tasks) + i)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
        return self._fd

    @staticmethod
    def _read(fd: int, index: int) -> float:
        return struct.unpack("<d", os.pread(fd, 8, 8 * index))[0]
