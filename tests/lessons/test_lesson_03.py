"""Lesson 3 (GPU memory) passes nbval, and its HTML export shows the memory bars, the OOM
error and two programs sharing and splitting GPUs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "lessons" / "03_gpu_memory.ipynb"
SANITIZE = ROOT / "lessons" / "sanitize.cfg"

pytestmark = pytest.mark.slow


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                         env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for name in ("CUDA_VISIBLE_DEVICES", "TFTEACH_VIRTUAL_GPUS", "TFTEACH_DEVICE_SPEED"):
        env.pop(name, None)
    return env


def test_lesson_passes_nbval_with_its_sanitizers(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", str(LESSON), "--nbval-sanitize-with",
         str(SANITIZE), "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
        check=False, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", done.stdout)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("export")
    subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", str(LESSON),
                    "--output-dir", str(out)], check=True, capture_output=True, env=_env(),
                   timeout=300)
    return (out / "03_gpu_memory.html").read_text()


def test_export_draws_the_memory_bars_and_the_oom_error(exported):
    assert "reserved 1024, limit 1024 MiB" in exported       # the default pool: whole GPU
    assert "reserved 64, limit 1024 MiB" in exported         # allow_growth grew to the peak
    assert "ResourceExhaustedError" in exported
    assert "OOM when allocating tensor with shape[8192,8192]" in exported
    assert "Hint:" in exported


def test_export_shows_sharing_and_splitting(exported):
    assert "same device object: True" in exported
    assert "this tensor: 80.0 MiB" in exported                # B fails because of A
    assert "pci bus id: virtual:1" in exported                # B's GPU:0 is the second GPU
    assert "Correct: the largest batch. Well done!" in exported
    assert "On real TensorFlow" in exported
