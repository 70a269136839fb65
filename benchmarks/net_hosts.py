"""Hosts for the benchmarks: network namespaces on a bridge, each with its own hostname
and ``/dev/shm``, so tasks in them take the network path, as on separate machines.

``NetHosts(count)`` (root only; ``why_not()`` says why it cannot be used) makes a switch
namespace holding a bridge and ``count`` host namespaces, each joined to the bridge by a
veth pair, with addresses 198.51.100.2, .3, ... (TEST-NET-2) and loopback up.
``command(i, argv)`` prefixes ``argv`` so that it runs on host ``i``: in its network
namespace, with a hostname of its own and a private tmpfs on ``/dev/shm``. Every namespace
is deleted on exit (which deletes the veth pairs and the bridge with it); nothing is
routed outside them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Sequence

SUBNET = "198.51.100"
_PRIVATE = ('hostname "$0" && mount -t tmpfs -o size=1g tfteach-shm /dev/shm '
            '&& exec "$@"')


def why_not() -> str:
    """Why namespaces cannot be made here ("" if they can)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "unshare"):
        if shutil.which(tool) is None:
            return f"needs the {tool!r} command"
    return ""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class NetHosts:
    """``count`` namespaces on one bridge (a context manager)."""

    def __init__(self, count: int, tag: str = "") -> None:
        """``tag``: the namespaces another process made (``command`` only, no exit)."""
        self.count = count
        self.tag = tag or f"tfnet-{os.getpid()}"
        self.names = [f"{self.tag}-{i}" for i in range(count)]
        self._switch = f"{self.tag}-sw"
        self._made: list[str] = []

    def address(self, index: int) -> str:
        return f"{SUBNET}.{index + 2}"

    def command(self, index: int, argv: Sequence[str]) -> list[str]:
        """``argv`` run on host ``index`` (own network, hostname and /dev/shm)."""
        return ["ip", "netns", "exec", self.names[index], "unshare", "--uts", "--mount",
                "--propagation", "private", "sh", "-c", _PRIVATE,
                f"{self.tag}-host{index}", *argv]

    def __enter__(self) -> "NetHosts":
        try:
            self._add_netns(self._switch)
            _ip("-n", self._switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self._switch, "link", "set", "br0", "up")
            for index, name in enumerate(self.names):
                self._add_host(index, name)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _add_netns(self, name: str) -> None:
        _ip("netns", "add", name)
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def _add_host(self, index: int, name: str) -> None:
        self._add_netns(name)
        inner, outer = f"tn{os.getpid()}h{index}", f"tn{os.getpid()}s{index}"
        _ip("link", "add", inner, "netns", name, "type", "veth", "peer", "name", outer,
            "netns", self._switch)
        _ip("-n", self._switch, "link", "set", outer, "master", "br0", "up")
        _ip("-n", name, "addr", "add", f"{self.address(index)}/24", "dev", inner)
        _ip("-n", name, "link", "set", inner, "up")

    def __exit__(self, *exc_info: object) -> None:
        for name in reversed(self._made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self._made.clear()
