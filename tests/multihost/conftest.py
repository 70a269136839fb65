"""``make_hosts(count, shared=False)``: ``hosts.NetHosts`` made for one test and always
removed at its end (namespaces, processes), also when the test fails; the test skips,
with the reason, where namespaces cannot be made (not root, no ``ip``/``unshare``, or
the kernel refuses)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "programs"):     # hosts.py; the programs' harness
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from hosts import NetHosts, why_not  # noqa: E402


@pytest.fixture
def make_hosts(request):
    made: list[NetHosts] = []

    def make(count: int, shared: bool = False) -> NetHosts:
        reason = why_not()
        if reason:
            pytest.skip(f"multi-host tests {reason}")
        hosts = NetHosts(count, shared=shared)
        made.append(hosts)
        try:
            hosts.__enter__()
        except subprocess.CalledProcessError as exc:
            pytest.skip(f"cannot make network namespaces here: {exc.stderr.strip()}")
        return hosts

    yield make
    for hosts in made:
        hosts.close()
