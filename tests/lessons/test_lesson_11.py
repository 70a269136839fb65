"""Lesson 11 passes nbval, leaves no task process behind, and its export shows each failure explained."""
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
LESSON = ROOT / "lessons" / "11_when_things_go_wrong.ipynb"
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
    return (out / "11_when_things_go_wrong.html").read_text()


def test_export_shows_every_failure_with_its_hint(exported):
    for error, detail in [("UnavailableError", "no response from worker: /job:ps/replica:0/task:0"),
                          ("UnavailableError", "Task /job:worker/replica:0/task:1"),
                          ("AbortedError", "Graph handle is not found"),
                          ("FailedPreconditionError", "uninitialized value"),
                          ("PermissionDeniedError", "without a cluster token"),
                          ("UnauthenticatedError", "wrong cluster token for task "
                                                   "/job:worker/replica:0/task:1")]:
        assert re.search(rf"<b>{error}</b>.*?{re.escape(detail)}.*?<b>Hint:</b>", exported,
                         re.S), error
    assert "restoring model.ckpt-20" in exported and "step 20: w = 2.312" in exported
    assert re.search(r"25 ps restarted\s+21 22 .* 40\b", exported), "MonitoredTrainingSession"
    assert exported.count("Well done!") == 2
    assert "Stopped the cluster" in exported
    assert "TFTEACH_CLUSTER_TOKEN=" not in exported, "the token is never shown"
