"""tfteach/ passes ``ruff check`` with the configuration in pyproject.toml (pyflakes and
bugbear's B905: every zip() says whether its lengths must agree)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_finds_nothing_in_tfteach():
    pytest.importorskip("ruff")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", "tfteach/"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"ruff check tfteach/ found:\n{done.stdout}{done.stderr}"
