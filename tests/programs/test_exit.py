"""A program that leaves servers, sessions and clusters open ends as a TF program does.

Its last line, an uncaught exception, SIGTERM, and a notebook kernel's shutdown or restart
each end it within ``EXIT_S``, with TF's exit status, and nothing it started stays: no task
process, no shared-memory segment.
"""
from __future__ import annotations

import signal
import time

import pytest

from harness import ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
EXIT_S = 2.0
VALUES = ["131072.0", "1"]


def test_ending_with_everything_open_exits_at_once(start):
    proc = start("left_open.py", "end")
    assert proc.wait(60) == 0, proc.transcript()
    assert proc.stdout.splitlines() == VALUES
    assert proc.exit_delay() < EXIT_S
    assert proc.leftovers() == []


def test_an_uncaught_exception_exits_with_status_1(start):
    proc = start("left_open.py", "raise")
    assert proc.wait(60) == 1, proc.transcript()
    assert "RuntimeError: the learner's bug" in proc.stderr
    assert proc.exit_delay() < EXIT_S
    assert proc.leftovers() == []


def test_sigterm_ends_the_program_and_what_it_started(start):
    proc = start("left_open.py", "wait")
    proc.wait_for("^waiting$")
    sent = time.monotonic()
    proc.signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM, proc.transcript()
    assert proc.exited_at - sent < EXIT_S
    assert proc.leftovers() == []


@pytest.mark.parametrize("how", ["shutdown", "restart"])
def test_a_kernel_shutdown_or_restart_ends_it_without_a_kill(how, tmp_path, monkeypatch):
    """jupyter_client asks the kernel to shut down and kills it only if it is still there
    ``shutdown_wait_time`` later: the kernel must leave by itself, at once."""
    from jupyter_client.manager import start_new_kernel

    from harness import Process

    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        code = (ROOT / "tests/programs/scripts/left_open.py").read_text()
        reply = kc.execute_interactive(code.replace("sys.argv[1]", "'end'"), timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        popen = km.provisioner.process
        kernel = Process.__new__(Process)       # only for leftovers(): the kernel's pid
        kernel.popen = popen
        km.shutdown_wait_time = 10.0
        asked = time.monotonic()
        if how == "shutdown":
            km.shutdown_kernel(now=False)
        else:
            km.restart_kernel(now=False)
        assert popen.wait(15) == 0          # left by itself: a kill would read -9
        assert time.monotonic() - asked < EXIT_S + 1.0
        assert kernel.leftovers() == []
    finally:
        kc.stop_channels()
        if km.is_alive():
            km.shutdown_kernel(now=True)
