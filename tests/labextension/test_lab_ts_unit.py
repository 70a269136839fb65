"""The labextension's TypeScript unit tests (jest), run through npm from pytest."""
from __future__ import annotations

import re

from labharness import ensure_node_modules, run_npm


def test_typescript_model_tests_pass():
    ensure_node_modules()
    done = run_npm("test", "--", "--ci", timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    summary = re.search(r"Tests:\s+(.*)", output)
    assert summary is not None, output
    assert "failed" not in summary.group(1)
    assert int(re.search(r"(\d+) passed", summary.group(1)).group(1)) >= 20


def test_typescript_compiles_without_errors():
    ensure_node_modules()
    done = run_npm("exec", "--", "tsc", "--noEmit", "-p", ".", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
