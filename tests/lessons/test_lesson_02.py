"""Lesson 2 (placing by hand and by function) passes nbval, and its HTML export shows the
nested-scope placement, the device function's CPU variables and the int32 kernel error."""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "lessons" / "02_placing_by_hand.ipynb"
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
    return (out / "02_placing_by_hand.html").read_text()


def _svgs(html: str) -> list[str]:
    return [base64.b64decode(b).decode() for b in
            re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', html)]


def test_export_draws_each_placement(exported):
    graphs = [s for s in _svgs(exported) if "cluster_dev_" in s]
    assert len(graphs) >= 7
    assert any(">w/read</text>" in s and ">CPU:0</text>" in s and ">GPU:1</text>" in s
               for s in graphs), "the device function's drawing has w on the CPU, y on GPU:1"


def test_export_explains_the_int32_error_and_checks_the_exercises(exported):
    assert "InvalidArgumentError" in exported
    assert "no supported kernel for GPU devices" in exported
    assert "Hint:" in exported
    assert "Correct: the placement. Well done!" in exported
    assert "Correct: the requests of p, q and r. Well done!" in exported
    assert "On real TensorFlow" in exported
