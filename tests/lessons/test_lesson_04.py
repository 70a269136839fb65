"""Lesson 4 (how a graph runs) passes nbval, and its HTML export shows the ready-queue
walk-through, timelines with overlapping GPUs and the cost of copies."""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "lessons" / "04_how_a_graph_runs.ipynb"
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
    return (out / "04_how_a_graph_runs.html").read_text()


def test_export_walks_through_the_pending_counts(exported):
    assert "pending counts: {'x': 0, 'w': 0, 'b': 0, 'xw': 2, 'sq': 1, 'y': 2, 'out': 2}" in exported
    assert "7. run out" in exported
    assert "Correct: the pending counts. Well done!" in exported


def test_export_draws_timelines_and_copy_costs(exported):
    timelines = [s for s in _svgs(exported) if "tfteach-tl-arrow" in s]
    assert len(timelines) >= 6
    assert any(">GPU:0</text>" in s and ">GPU:1</text>" in s and ">MatMul</text>" in s
               for s in timelines), "the two GPUs' products on one timeline"
    assert "67108864" in exported                              # the 64 MiB copy's bytes
    assert "Correct: the number of transfers. Well done!" in exported
    assert "On real TensorFlow" in exported


def _svgs(html: str) -> list[str]:
    return [base64.b64decode(b).decode() for b in
            re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)]
