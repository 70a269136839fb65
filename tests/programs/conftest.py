"""``start(name, *args, backend=...)``: a program of ``scripts/`` started in the test's own
folder, and killed at the end of the test if it is still running (a failed test leaves
nothing behind)."""
from __future__ import annotations

import pytest

from harness import program


@pytest.fixture
def start(tmp_path):
    started = []

    def start(name: str, *args, backend: str = "tfteach"):
        proc = program(name, *args, backend=backend, cwd=tmp_path)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
