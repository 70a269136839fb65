"""What the lesson tests and ``execute.py`` share: the environment a lesson runs in, running
it under nbval, exporting it to HTML, and checking that a cluster lesson stopped every
process it started.

A lesson runs with this checkout first on PYTHONPATH and with the device and cluster-token
variables unset, so it sees the defaults its stored outputs were made with (two virtual
GPUs, no token). A ``registry`` folder, when given, holds the LocalClusters the run
registers and marks every process it starts (kernel and tasks), so a test can find them.
"""
from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
SANITIZE = LESSONS / "sanitize.cfg"
REGISTRY_ENV = "TFTEACH_REGISTRY_DIR"
_UNSET = ("CUDA_VISIBLE_DEVICES", "TFTEACH_VIRTUAL_GPUS", "TFTEACH_DEVICE_SPEED",
          "TFTEACH_CLUSTER_TOKEN")
_SVG = re.compile(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')


def lesson_env(registry: Path | None = None) -> dict[str, str]:
    """This process's environment, made the one a lesson's kernel should start in."""
    env = dict(os.environ)
    paths = [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    for name in _UNSET:
        env.pop(name, None)
    if registry is not None:
        env[REGISTRY_ENV] = str(registry)
    return env


def assert_passes_nbval(notebook: Path, workdir: Path) -> Path:
    """Run ``notebook`` under nbval with the lessons' sanitizers in a fresh pytest process.

    Returns the registry folder the run used (``workdir/registry``)."""
    registry = workdir / "registry"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", str(notebook), "--nbval-sanitize-with",
         str(SANITIZE), "-q", "-p", "no:cacheprovider", "--rootdir", str(workdir)],
        check=False, cwd=ROOT, env=lesson_env(registry), capture_output=True, text=True,
        timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\b\d+ passed\b", done.stdout)
    return registry


def processes_marked_with(registry: Path) -> list[int]:
    """Live processes whose environment names ``registry`` (a lesson's kernel and tasks)."""
    mark = f"{REGISTRY_ENV}={registry}".encode()
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


def assert_stopped_every_task(registry: Path) -> None:
    """No process of the run is left, and no LocalCluster is still registered."""
    deadline = time.monotonic() + 30       # tasks notice their kernel's exit within ~1 s
    while processes_marked_with(registry) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_marked_with(registry) == [], "the lesson left task processes running"
    assert not list(registry.glob("*.json")), "the lesson left a LocalCluster registered"


def export_html(notebook: Path, out: Path) -> Path:
    """``notebook`` exported by nbconvert to ``out`` as HTML, with its stored outputs."""
    done = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", str(notebook), "--output-dir",
         str(out)], check=False, capture_output=True, text=True,
        env=lesson_env(out / "registry"), timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return out / notebook.with_suffix(".html").name


def svgs(html: str) -> list[str]:
    """The SVG pictures embedded in an exported page, decoded."""
    return [base64.b64decode(b).decode() for b in _SVG.findall(html)]
