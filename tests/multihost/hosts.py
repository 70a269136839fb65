"""Hosts for multi-host tests and benchmarks: network namespaces on a bridge.

``NetHosts(count)`` (root only; ``why_not()`` says why it cannot be used) makes, as a
context manager, a switch namespace holding a bridge and ``count`` host namespaces, each
joined to the bridge by a veth pair, with addresses 198.51.100.2, .3, ... (TEST-NET-2) and
loopback up. Nothing is made in the caller's own namespace, and no host has a route out of
the subnet, so nothing a test runs on a host can reach any other network.

``command(i, argv)`` prefixes ``argv`` so that it runs on host ``i``: in its network
namespace and, unless ``shared=True``, with a hostname of its own (``host<i>-<tag>``) and a
private tmpfs on ``/dev/shm`` (``unshare --uts --mount``). ``shared=True`` is the
Mininet-style set-up: every host keeps this machine's hostname and ``/dev/shm``.
``popen(i, argv)`` starts such a process (in a session of its own); ``run`` waits for one.

State: the namespaces made (``names``, unique per run: the tag holds the pid and random
digits, so parallel runs never collide) and the processes started. ``close()`` (the exit)
kills every process still running in a host namespace, then deletes the namespaces, which
deletes the veth pairs and the bridge with them; it runs on failure too.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
from typing import Any, Sequence

SUBNET = "198.51.100"
SHM_SIZE = "1g"
_PRIVATE = ('hostname "$0" && mount -t tmpfs -o size=' + SHM_SIZE +
            ',mode=1777 tfteach-shm /dev/shm && exec "$@"')


def why_not() -> str:
    """Why namespaces cannot be made here ("" if they can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"needs the {tool!r} command"
    return ""


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


class NetHosts:
    """``count`` hosts on one bridge (a context manager; see the module docstring)."""

    def __init__(self, count: int, tag: str = "", shared: bool = False) -> None:
        """``tag``: the namespaces another process made (``command`` only, no exit)."""
        self.count = count
        self.shared = shared
        self._id = secrets.token_hex(3)
        self.tag = tag or f"tfmh-{os.getpid()}-{self._id}"
        self.names = [f"{self.tag}-{i}" for i in range(count)]
        self._switch = f"{self.tag}-sw"
        self._made: list[str] = []
        self._started: list[subprocess.Popen] = []

    def __repr__(self) -> str:
        return f"NetHosts({self.count}, tag={self.tag!r}, shared={self.shared})"

    def address(self, index: int) -> str:
        """Host ``index``'s address on the bridge."""
        return f"{SUBNET}.{index + 2}"

    def hostname(self, index: int) -> str:
        """The hostname processes on host ``index`` see (unless ``shared``)."""
        return f"host{index}-{self._id}"

    def command(self, index: int, argv: Sequence[str]) -> list[str]:
        """``argv`` run on host ``index`` (see the module docstring)."""
        prefix = ["ip", "netns", "exec", self.names[index]]
        if self.shared:
            return [*prefix, *argv]
        return [*prefix, "unshare", "--uts", "--mount", "--propagation", "private",
                "sh", "-c", _PRIVATE, self.hostname(index), *argv]

    def popen(self, index: int, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
        """Start ``argv`` on host ``index`` (``subprocess.Popen`` keyword arguments); it
        is killed at ``close()`` if it still runs."""
        proc = subprocess.Popen(self.command(index, argv), start_new_session=True, **kwargs)
        self._started.append(proc)
        return proc

    def run(self, index: int, argv: Sequence[str], timeout: float = 60.0,
            **kwargs: Any) -> subprocess.CompletedProcess:
        """Run ``argv`` on host ``index`` to its end; its output as text."""
        return subprocess.run(self.command(index, argv), capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    def __enter__(self) -> "NetHosts":
        try:
            self._add_netns(self._switch)
            _ip("-n", self._switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self._switch, "link", "set", "br0", "up")
            for index, name in enumerate(self.names):
                self._add_host(index, name)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _add_netns(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def _add_host(self, index: int, name: str) -> None:
        self._add_netns(name)
        inner, outer = f"mh{self._id}h{index}", f"mh{self._id}s{index}"
        _ip("link", "add", inner, "netns", name, "type", "veth", "peer", "name", outer,
            "netns", self._switch)
        _ip("-n", self._switch, "link", "set", outer, "master", "br0", "up")
        _ip("-n", name, "addr", "add", f"{self.address(index)}/24", "dev", inner)
        _ip("-n", name, "link", "set", inner, "up")

    def close(self) -> None:
        """Kill what still runs on the hosts, then delete every namespace made."""
        for proc in self._started:
            if proc.poll() is None:
                _kill_group(proc.pid)
        for name in self._made:
            for pid in _pids_in(name):
                _kill(pid)
        for proc in self._started:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for name in reversed(self._made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self._made.clear()
        self._started.clear()


def _pids_in(name: str) -> list[int]:
    """The processes in network namespace ``name`` (all started on that host)."""
    found = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split() if pid.isdigit()]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        _kill(pid)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
