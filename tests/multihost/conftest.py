"""Fixtures of the multi-host suite.

``make_hosts(count, shared=False)``: ``hosts.NetHosts`` made for one test and always
removed at its end (namespaces, processes), also when the test fails; the test skips, with
the reason, where namespaces cannot be made (not root, no ``ip``/``unshare``, or the kernel
refuses). ``start(hosts, index, program, *args, backend=...)``: a program of
``tests/programs/scripts`` (or ``-m module``) started on host ``index`` in the test's own
folder, with the cluster token every non-loopback task needs (``environment``), as a
harness ``Process``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent / "programs"):     # hosts.py; the programs' harness
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from harness import ROOT, TF_QUIET, Process, has_tensorflow, script_for  # noqa: E402
from hosts import NetHosts, why_not  # noqa: E402

TOKEN = "multihost-suite-token"
ON_TF = [pytest.mark.conformance,
         pytest.mark.skipif(not has_tensorflow(), reason="TensorFlow is not installed "
                            "(pip install -e '.[conformance]')")]


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


def environment(backend: str = "tfteach", extra: dict | None = None) -> dict:
    """A program's environment on ``backend``: unbuffered, this checkout importable, the
    suite's cluster token, and ``extra``."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", TFTEACH_VIRTUAL_GPUS="0",
               TFTEACH_CLUSTER_TOKEN=TOKEN, PYTHONPATH=str(ROOT))
    if backend == "tensorflow":
        env.update(TF_QUIET)
        env.pop("GRPC_VERBOSITY", None)     # importing tfteach set it: TF then logs nothing
    env.update(extra or {})
    return env
