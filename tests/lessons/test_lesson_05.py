"""Lesson 5 (data parallelism) passes nbval, and its HTML export shows the towers' shared
variables, a traced step, the scaling table and the slow GPU's idle time."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "lessons" / "05_data_parallelism.ipynb"
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
    return (out / "05_data_parallelism.html").read_text()


def test_export_shows_towers_sharing_one_set_of_variables(exported):
    assert "model/hidden1/weights:0" in exported and "asks for /device:CPU:0" in exported
    assert "GPU:0: 46 ops   tower_0/ (46)" in exported
    assert "GPU:1: 46 ops   tower_1/ (46)" in exported
    assert "test accuracy 0.9" in exported                     # the two towers learned


def test_export_shows_scaling_and_the_slow_gpu(exported):
    assert re.search(r"<td>4</td>\s*<td>1024</td>\s*<td>[\d.]+ steps/s</td>\s*"
                     r"<td>\d+ examples/s</td>\s*<td>[\d.]+x</td>", exported)
    assert "0.3x" in exported                                  # the slow GPU in the table
    assert re.search(r"<td>GPU:0</td>(\s*<td>[\d.]+ (µs|ms|s)</td>){3}", exported)
    assert exported.count('src="data:image/png;base64,') >= 3   # digits, loss, bar chart
    assert "Correct: the slow GPU's share of the batch. Well done!" in exported
    assert "On real TensorFlow" in exported
