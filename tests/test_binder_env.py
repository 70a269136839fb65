"""Binder: a fresh virtual environment built from binder/ runs lesson 1 with no GPU.

This does what repo2docker does with our files: a new venv holding what repo2docker's
Python 3.11 base environment brings (an older JupyterLab 4 and Notebook 7, see
``BASE_IMAGE``), then `pip install -r binder/requirements.txt`, then `binder/postBuild` (installs tfteach, building its wheel with
the JupyterLab extension). Then lesson 1 is executed in that environment's own kernel.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
# repo2docker installs Jupyter into its base environment before it reads binder/; our pins
# must upgrade these consistently (notebook 7.x goes with one JupyterLab minor only).
BASE_IMAGE = ["notebook==7.4.7", "jupyterlab==4.4.10"]


def _run(cmd: list[str], env: dict, cwd: Path) -> str:
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


def test_binder_environment_runs_lesson_1(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("building tfteach's wheel needs Node.js/npm (Binder's image has it)")
    repo = tmp_path / "repo"
    _run(["git", "clone", "-q", str(ROOT), str(repo)], dict(os.environ), tmp_path)
    env_dir = tmp_path / "binder-env"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "CUDA_VISIBLE_DEVICES", "TFTEACH_VIRTUAL_GPUS")
    env = {k: v for k, v in os.environ.items() if k not in drop}      # as on Binder: no GPU
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", VIRTUAL_ENV=str(env_dir),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    python = str(bin_dir / "python")
    _run([python, "-m", "pip", "install", "-q", *BASE_IMAGE], env, repo)
    _run([python, "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"], env, repo)
    _run(["bash", "binder/postBuild"], env, repo)
    _run([python, "-m", "pip", "check"], env, repo)       # the pins agree with what was there
    where = _run([python, "-c", "import tfteach, sys; print(tfteach.__file__)"], env, tmp_path)
    assert str(env_dir) in where.splitlines()[-1]                     # the installed wheel, not the checkout
    exts = _run([str(bin_dir / "jupyter"), "labextension", "list"], env, tmp_path)
    assert "tfteach" in exts and "enabled" in exts.split("tfteach", 1)[1].splitlines()[0]
    out = tmp_path / "lesson1.ipynb"
    _run([python, "-m", "nbconvert", "--to", "notebook", "--execute",
          "--ExecutePreprocessor.timeout=120", "--output", str(out),
          str(repo / "lessons" / "01_device_placement.ipynb")], env, tmp_path)
    nb = json.loads(out.read_text())
    text = "\n".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"])
                     for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]
                     if o.get("output_type") == "stream")
    assert "virtual GPU" in text or "virtual" in json.dumps(nb["cells"][:8])
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"]
              if o.get("output_type") == "error"]
    assert errors == []
