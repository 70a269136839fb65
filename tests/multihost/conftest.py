"""Fixtures of the multi-host suite.

``make_hosts(count, shared=False)``: ``hosts.NetHosts`` made for one test and always
removed at its end (namespaces, processes), also when the test fails; the test skips, with
the reason, where namespaces cannot be made (not root, no ``ip``/``unshare``, or the kernel
refuses). ``start(hosts, index, program, *args, backend=...)``: a program of
``tests/programs/scripts`` (or ``-m module``) started on host ``index`` in the test's own
folder, with the cluster token every non-loopback task needs (``on_hosts.environment``),
as a harness ``Process``.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "programs"):     # hosts.py; the programs' harness
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from harness import Process, script_for  # noqa: E402
from hosts import NetHosts, why_not  # noqa: E402
from on_hosts import environment  # noqa: E402


@pytest.fixture
def make_hosts():
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


@pytest.fixture
def start(tmp_path):
    def start(hosts: NetHosts, index: int, program: str, *args: object,
              backend: str = "tfteach", env: dict | None = None) -> Process:
        script = ["-m", program] if not program.endswith(".py") else \
            [str(script_for(program, backend, tmp_path))]
        popen = hosts.popen(index, [sys.executable, *script, *map(str, args)], cwd=tmp_path,
                            env=environment(backend, env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace")
        return Process(popen, backend)

    return start
