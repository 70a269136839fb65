"""Lesson 6 (model parallelism) passes nbval, and its HTML export shows the split layers,
the busy-time comparison with data parallelism and the pipelined step."""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "lessons" / "06_model_parallelism.ipynb"
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
    return (out / "06_model_parallelism.html").read_text()


def test_export_compares_model_data_and_pipeline_parallelism(exported):
    for name, copied in [("model parallel", "8.0"), ("data parallel", "1.1"),
                         ("pipelined, 4 micro-batches", "8.0")]:
        assert re.search(rf"<td>{name}</td>\s*<td>[\d.]+ (µs|ms|s)</td>\s*<td>\d+% busy</td>"
                         rf"\s*<td>\d+% busy</td>\s*<td>{copied} MiB</td>", exported), name
    svgs = [base64.b64decode(b).decode() for b in
            re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', exported)]
    assert any("transfer layer1:0: 1.0 MiB" in s for s in svgs), "the activations cross"


def test_export_checks_both_exercises(exported):
    assert "Correct: the placement. Well done!" in exported
    assert "Correct: the bytes copied from GPU:0 to GPU:1. Well done!" in exported
    assert "On real TensorFlow" in exported
