"""Lesson 10 passes nbval, leaves no task process behind, and its export shows sync vs async."""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LESSON = ROOT / "lessons" / "10_sync_vs_async.ipynb"
SANITIZE = ROOT / "lessons" / "sanitize.cfg"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def _env(registry: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                         env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for name in ("CUDA_VISIBLE_DEVICES", "TFTEACH_VIRTUAL_GPUS", "TFTEACH_DEVICE_SPEED",
                 "TFTEACH_CLUSTER_TOKEN"):
        env.pop(name, None)
    env["TFTEACH_REGISTRY_DIR"] = str(registry)   # marks every process this run starts
    return env


def _processes_marked_with(registry: Path) -> list[int]:
    """Live processes whose environment names ``registry`` (the lesson's kernel and tasks)."""
    mark = f"TFTEACH_REGISTRY_DIR={registry}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if mark in (entry / "environ").read_bytes().split(b"\0") and \
                    (entry / "stat").read_text().split()[2] != "Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    registry = tmp_path / "registry"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", str(LESSON), "--nbval-sanitize-with",
         str(SANITIZE), "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
        cwd=ROOT, env=_env(registry), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", done.stdout)
    deadline = time.monotonic() + 30       # tasks notice their kernel's exit within ~1 s
    while _processes_marked_with(registry) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_marked_with(registry) == [], "the lesson left task processes running"
    assert not list(registry.glob("*.json")), "the lesson left a LocalCluster registered"


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("export")
    subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", str(LESSON),
                    "--output-dir", str(out)], check=True, capture_output=True,
                   env=_env(out / "registry"), timeout=300)
    return (out / "10_sync_vs_async.html").read_text()


def test_export_shows_curves_counts_and_feedback(exported):
    assert exported.count('src="data:image/png;base64,') >= 3, "the loss curves"
    assert "sync gradients accepted: at least 60 steps x 2 workers: True" in exported
    assert "sync: accuracy &gt;= 0.85: True" in exported
    assert "sync with a backup worker still learns (accuracy &gt;= 0.85): True" in exported
    assert "steps x replicas_to_aggregate" in exported, "feedback on the exercise"
    assert "Stopped the cluster" in exported
