"""Which process of this host is at the other end of a gRPC connection (Linux, from /proc).

A server must not take a client's word for where it runs. ``is_local(peer)`` tells from
the connection's source address alone: a loopback address, or one this host can bind (a TCP
connection cannot come from an address it does not own). ``socket_fd(peer, pid)`` finds
the client end of that connection among process ``pid``'s file descriptors: the socket whose local address is
the peer's address is found in this network namespace's ``/proc/net/tcp{,6}`` (any
process's), and its inode among ``/proc/<pid>/fd`` (readable only for processes of our uid,
or by root). Both take ``context.peer()`` strings (``ipv4:127.0.0.1:5000``,
``ipv6:[::1]:5000``, brackets maybe percent-encoded).
State: ``_bindable = {ip: bool}`` (at most ``_KEEP`` addresses).
"""
from __future__ import annotations

import ipaddress
import os
import socket
import struct
import urllib.parse
from pathlib import Path

_KEEP = 64
_ESTABLISHED = "01"
_bindable: dict[str, bool] = {}


def address(peer: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int] | None:
    """``(ip, port)`` of a gRPC peer string; None for a unix socket or anything else."""
    kind, _, rest = urllib.parse.unquote(peer).partition(":")
    host, _, port = rest.rpartition(":")
    if kind not in ("ipv4", "ipv6") or not port.isdigit():
        return None
    try:
        ip = ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip, int(port)


def is_local(peer: str) -> bool:
    """Whether the connection ``peer`` comes from this host (see module docstring)."""
    found = address(peer)
    if found is None:
        return False
    ip = found[0]
    if ip.is_loopback:
        return True
    key = str(ip)
    if key not in _bindable:
        if len(_bindable) >= _KEEP:
            _bindable.clear()
        _bindable[key] = _can_bind(ip)
    return _bindable[key]


def socket_fd(peer: str, pid: int) -> tuple[str, str] | None:
    """``(fd path, link)``: the entry of ``/proc/<pid>/fd`` that is the client end of the
    connection ``peer`` (``os.readlink(path) == link`` while it still is); None when
    ``pid`` holds no such socket or cannot be inspected."""
    found = address(peer)
    if found is None:
        return None
    links = {f"socket:[{inode}]" for inode in _socket_inodes(*found)}
    fd_dir = f"/proc/{pid}/fd"
    try:
        entries = os.listdir(fd_dir)
    except OSError:
        return None
    for entry in entries:
        try:
            link = os.readlink(f"{fd_dir}/{entry}")
        except OSError:
            continue
        if link in links:
            return f"{fd_dir}/{entry}", link
    return None


def _socket_inodes(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> set[str]:
    """Inodes of this namespace's established TCP sockets whose local address is
    ``ip:port``."""
    if isinstance(ip, ipaddress.IPv4Address):
        words = [struct.unpack("=I", ip.packed)[0]]
        mapped = ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed)
        wanted = {f"{words[0]:08X}:{port:04X}", _hex6(mapped, port)}
    else:
        wanted = {_hex6(ip, port)}
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[1] in wanted and fields[3] == _ESTABLISHED:
                inodes.add(fields[9])
    return inodes


def _hex6(ip: ipaddress.IPv6Address, port: int) -> str:
    words = struct.unpack("=4I", ip.packed)
    return "".join(f"{word:08X}" for word in words) + f":{port:04X}"


def _can_bind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((str(ip), 0))
        return True
    except OSError:
        return False
