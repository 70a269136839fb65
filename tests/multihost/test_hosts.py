"""The hosts themselves: each has its own address, hostname and /dev/shm (or, shared,
this machine's), reaches the others over the bridge, has no route out of the subnet, and
is gone, with what ran on it, once closed."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hosts import SUBNET, NetHosts

pytestmark = [pytest.mark.cluster]


def _names() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_each_host_has_its_own_hostname_and_dev_shm(make_hosts):
    hosts = make_hosts(2)
    seen = [hosts.run(i, ["sh", "-c", "hostname; touch /dev/shm/mh_probe; ls /dev/shm"])
            for i in range(2)]
    assert [s.stdout.split()[0] for s in seen] == [hosts.hostname(0), hosts.hostname(1)]
    assert all(s.stdout.split()[1:] == ["mh_probe"] for s in seen), seen
    assert not os.path.exists("/dev/shm/mh_probe")


def test_shared_hosts_keep_this_machines_hostname_and_dev_shm(make_hosts):
    hosts = make_hosts(1, shared=True)
    seen = hosts.run(0, ["sh", "-c", "hostname; stat -c %d /dev/shm"]).stdout.split()
    assert seen == [os.uname().nodename, str(os.stat("/dev/shm").st_dev)]


CONNECT = ("import socket, sys\n"
           "try:\n"
           "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()\n"
           "    print('connected')\n"
           "except OSError as e:\n"
           "    print(e.strerror)\n")


def test_hosts_reach_each_other_and_nothing_else(make_hosts):
    hosts = make_hosts(2)
    server = hosts.popen(1, [sys.executable, "-c", "import socket; s = socket.create_server("
                             f"('{hosts.address(1)}', 7401)); print('up', flush=True); "
                             "s.accept()"], stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline() == "up\n"
    near = hosts.run(0, [sys.executable, "-c", CONNECT, hosts.address(1), "7401"])
    assert near.stdout.strip() == "connected", near
    far = hosts.run(0, [sys.executable, "-c", CONNECT, "192.0.2.1", "9"])
    assert far.stdout.strip() == "Network is unreachable", far
    routes = hosts.run(1, ["ip", "-4", "route"]).stdout.strip().splitlines()
    assert routes and all(line.startswith(f"{SUBNET}.0/24 ") for line in routes), routes


def test_close_removes_the_namespaces_and_what_ran_there():
    from hosts import why_not
    if why_not():
        pytest.skip(why_not())
    with NetHosts(1) as hosts:
        sleeper = hosts.popen(0, ["sleep", "600"])
        assert hosts.names[0] in _names()
    assert sleeper.poll() is not None
    assert not any(name in _names() for name in (*hosts.names, hosts.tag + "-sw"))
