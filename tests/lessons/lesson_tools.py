"""What the lesson tests and ``execute.py`` share: the environment a lesson runs in, running
it under nbval, exporting it to HTML, and checking that a cluster lesson stopped every
process it started. A cell whose metadata says ``{"tfteach": {"needs": "tensorflow"}}`` runs
only where that package is installed (as in CI); elsewhere nbval skips it.

A lesson runs with this checkout first on PYTHONPATH and with the device and cluster-token
variables unset, so it sees the defaults its stored outputs were made with (two virtual
GPUs, no token), and in its own language: ``TFTEACH_LANG`` is the ``tfteach.lang`` of the
notebook's metadata (``en`` where it has none). The English lessons are ``lessons/*.ipynb``,
each translation's are ``lessons/<lang>/`` with the same file names (``lesson_path``). A ``registry`` folder, when given, holds the LocalClusters the run
registers and marks every process it starts (kernel and tasks), so a test can find them.
"""
from __future__ import annotations

import base64
import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
LESSONS = ROOT / "lessons"
LANGS = ("en", "ko", "zh", "ru")
SANITIZE = LESSONS / "sanitize.cfg"
REGISTRY_ENV = "TFTEACH_REGISTRY_DIR"
_UNSET = ("CUDA_VISIBLE_DEVICES", "TFTEACH_VIRTUAL_GPUS", "TFTEACH_DEVICE_SPEED",
          "TFTEACH_CLUSTER_TOKEN", "TFTEACH_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES")


def lesson_path(name: str, lang: str = "en") -> Path:
    """The lesson file ``name`` (e.g. ``04_how_a_graph_runs.ipynb``) in ``lang``."""
    return LESSONS / name if lang == "en" else LESSONS / lang / name


def notebook_lang(notebook: Path) -> str:
    """The language a notebook's metadata names (``tfteach.lang``), else ``en``."""
    nb = nbformat.read(notebook, as_version=4)
    return nb.metadata.get("tfteach", {}).get("lang", "en")
_SVG = re.compile(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"')


def lesson_env(registry: Path | None = None, lang: str = "en") -> dict[str, str]:
    """This process's environment, made the one a lesson's kernel should start in."""
    env = dict(os.environ)
    paths = [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    for name in _UNSET:
        env.pop(name, None)
    env["TFTEACH_LANG"] = lang
    if registry is not None:
        env[REGISTRY_ENV] = str(registry)
    return env


def needs_missing_package(cell) -> bool:
    """Whether a cell needs a package (``metadata.tfteach.needs``) this Python lacks."""
    needs = cell.metadata.get("tfteach", {}).get("needs")
    return bool(needs) and importlib.util.find_spec(needs) is None


def runnable_here(notebook: Path, workdir: Path) -> Path:
    """``notebook``, or a copy in ``workdir`` in which nbval skips the cells that need a
    package this Python lacks (e.g. the "Try it on real TensorFlow" cells without
    TensorFlow)."""
    nb = nbformat.read(notebook, as_version=4)
    skipped = [c for c in nb.cells if c.cell_type == "code" and needs_missing_package(c)]
    if not skipped:
        return notebook
    for cell in skipped:
        cell.metadata["tags"] = [*cell.metadata.get("tags", []), "nbval-skip"]
    copy = workdir / notebook.name
    nbformat.write(nb, copy)
    return copy


def assert_passes_nbval(notebook: Path, workdir: Path) -> Path:
    """Run ``notebook`` under nbval with the lessons' sanitizers in a fresh pytest process
    (cells that need a package this Python lacks are skipped).

    Returns the registry folder the run used (``workdir/registry``)."""
    registry = workdir / "registry"
    lang = notebook_lang(notebook)
    notebook = runnable_here(notebook, workdir)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", str(notebook), "--nbval-sanitize-with",
         str(SANITIZE), "-q", "-p", "no:cacheprovider", "--rootdir", str(workdir)],
        check=False, cwd=ROOT, env=lesson_env(registry, lang), capture_output=True, text=True,
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


def stored_outputs(notebook: Path, marker: str) -> list:
    """The stored outputs of the first code cell of ``notebook`` whose source has ``marker``."""
    nb = nbformat.read(notebook, as_version=4)
    return next(c for c in nb.cells if c.cell_type == "code" and marker in c.source).outputs


def output_texts(outputs: list) -> str:
    """The text/plain forms and streams of ``outputs``, one after another."""
    return "\n".join(o.get("text") or o.get("data", {}).get("text/plain", "") for o in outputs)
