"""Packaging on every Python that ``requires-python`` admits: for each of 3.11, 3.12 and 3.13
a fresh venv installs the built wheel with the ``lab`` extra from the package index, and
there tfteach runs a graph, Jupyter lists its extensions as enabled, and lesson 1's first
cells run in a kernel of that Python. The ``test`` and ``conformance`` extras must resolve
to wheels there too. A Python that cannot be found (on PATH as ``python3.X``, or under
``~/.pyenv/versions/3.X.*``) skips with the places looked in.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_lab_install import wheel  # noqa: F401  (the fixture: one wheel for the module)

pytestmark = pytest.mark.slow

PYTHONS = ("3.11", "3.12", "3.13")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Dependencies that publish only an sdist; pip builds them, which needs no compiler as
# they are pure Python (fontmeta: mplfonts' font reader).
PURE_PYTHON_SDISTS = {"fontmeta"}
GRAPH = """
import tfteach as tf
with tf.device('/gpu:0'):
    c = tf.matmul(tf.constant([[1.0, 2.0]]), tf.constant([[3.0], [4.0]]))
sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
print(sess.run(c).tolist())
"""
# Runs lesson 1's cells up to its first %%placement cell in a kernel of the venv's Python,
# then prints the kernel's Python version; prints each code cell's outputs as JSON.
LESSON = """
import json, sys
import nbclient, nbformat
from tfteach.cli import lessons_dir
nb = nbformat.read(lessons_dir() / "01_device_placement.ipynb", as_version=4)
code = [c for c in nb.cells if c.cell_type == "code"]
last = next(i for i, c in enumerate(code) if c.source.startswith("%%placement"))
nb.cells = code[:last + 1] + [nbformat.v4.new_code_cell(
    "import sys; print('kernel python %d.%d' % sys.version_info[:2])")]
nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
print(json.dumps([c.outputs for c in nb.cells]))
"""


@dataclass
class Venv:
    """A venv of one Python with the wheel installed, and what its installation said."""
    python: str
    root: Path
    wheel: Path
    env: dict[str, str]
    install: subprocess.CompletedProcess
    report: dict

    def run(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """Run a program of the venv (``python``, ``pip``, ``jupyter``...) in its env."""
        return subprocess.run([str(self.root / "bin" / args[0]), *args[1:]],
                              capture_output=True, text=True, timeout=timeout, check=False,
                              env=self.env, cwd=self.root)

    def output(self, *args: str) -> str:
        done = self.run(*args)
        return ANSI.sub("", done.stdout + done.stderr)


def find_python(version: str) -> str | None:
    """An interpreter that runs as Python ``version`` and has venv, or None."""
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(str(p) for p in
                         Path.home().glob(f".pyenv/versions/{version}.*/bin/python3"))
    probe = "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"
    for candidate in filter(None, candidates):
        done = subprocess.run([candidate, "-c", probe], capture_output=True, text=True,
                              timeout=60, check=False)
        if done.returncode == 0 and done.stdout.strip() == version:
            return candidate
    return None


def venv_env(root: Path) -> dict[str, str]:
    """This process's environment, without what points into another Python or Jupyter."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUPYTER_", "PYTHON", "VIRTUAL_ENV", "CONDA_"))}
    env.update(PATH=f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(root),
               JUPYTER_CONFIG_DIR=str(root / "jupyter-config"),
               JUPYTER_DATA_DIR=str(root / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(root / "jupyter-runtime"), JUPYTER_PLATFORM_DIRS="1",
               TFTEACH_REGISTRY_DIR=str(root / "registry"))
    return env


@pytest.fixture(scope="module", params=PYTHONS)
def venv(request, wheel, tmp_path_factory) -> Iterator[Venv]:  # noqa: F811
    """A fresh venv of each Python with ``tfteach[lab]`` installed from the built wheel."""
    python = find_python(request.param)
    if python is None:
        pytest.skip(f"Python {request.param} not found: no working python{request.param} "
                    f"on PATH, none under ~/.pyenv/versions/{request.param}.*/bin/python3")
    root = tmp_path_factory.mktemp(f"venv{request.param}")
    subprocess.run([python, "-m", "venv", str(root)], check=True, timeout=180)
    env = venv_env(root)
    started = time.monotonic()
    # --no-compile: byte-compiling every dependency is half of pip's CPU time here
    install = subprocess.run(
        [str(root / "bin" / "pip"), "install", "-q", "--no-compile", "--report",
         str(root / "report.json"), f"{wheel}[lab]"],
        capture_output=True, text=True, timeout=600, check=False, env=env)
    print(f"Python {request.param}: pip install tfteach[lab] took "
          f"{time.monotonic() - started:.0f} s")
    report = json.loads((root / "report.json").read_text()) if install.returncode == 0 else {}
    yield Venv(request.param, root, wheel, env, install, report)
    shutil.rmtree(root, ignore_errors=True)


def sdists(report: dict) -> set[str]:
    """The names of what a pip ``--report`` installs from something other than a wheel."""
    return {item["metadata"]["name"].lower() for item in report.get("install", [])
            if not item["download_info"]["url"].endswith(".whl")}


def dry_run(venv: Venv, extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    """``pip install --dry-run`` of the wheel with ``extra`` in ``venv``, and its report."""
    report = venv.root / f"report-{extra}.json"
    done = venv.run("pip", "install", "-q", "--dry-run", "--report", str(report),
                    f"{venv.wheel}[{extra}]", timeout=300)
    return done, json.loads(report.read_text()) if done.returncode == 0 else {}


def test_lab_extra_installs_from_wheels(venv):
    assert venv.install.returncode == 0, venv.install.stdout + venv.install.stderr
    assert sdists(venv.report) <= PURE_PYTHON_SDISTS, sdists(venv.report)


def test_pip_check_finds_no_broken_requirements(venv):
    done = venv.run("pip", "check")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_matmul_pinned_to_a_virtual_gpu_runs(venv):
    done = venv.run("python", "-c", GRAPH)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[[11.0]]", done.stdout + done.stderr


def test_jupyter_lists_the_labextension_as_enabled(venv):
    listing = venv.output("jupyter", "labextension", "list")
    assert re.search(r"tfteach v\S+ enabled\s+OK", listing), listing


def test_jupyter_lists_the_server_extension_as_enabled(venv):
    listing = venv.output("jupyter", "server", "extension", "list")
    assert re.search(r"tfteach\.notebook\.lab_handlers enabled", listing), listing
    assert re.search(r"tfteach\.notebook\.lab_handlers \S* ?OK", listing), listing


def test_lesson_1_first_cells_run_in_a_kernel_of_that_python(venv):
    done = venv.run("python", "-c", LESSON)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    outputs = json.loads(done.stdout.splitlines()[-1])
    text = json.dumps(outputs)
    assert '"output_type": "error"' not in text, text[:3000]
    assert "[[22. 28.]\\n [49. 64.]]" in text, text[:3000]
    assert f"kernel python {venv.python}" in text, text[-500:]


@pytest.mark.parametrize("extra", ["test", "conformance"])
def test_extra_resolves_to_wheels(venv, extra):
    done, report = dry_run(venv, extra)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sdists(report) <= PURE_PYTHON_SDISTS, sdists(report)
