"""The parallelism lessons (4, 5, 6, 9 and 10) hold their claims on one CPU core, as Binder
gives: each English notebook runs once under ``taskset -c 0`` (its kernel and every task it
starts pinned to core 0, solutions included, as ``execute.py`` runs them), and the claim
tests of its ``test_lesson_NN`` module that read only the notebook run on that executed
copy. Skipped where ``taskset`` is missing or the machine has one core anyway (the other
lesson tests then already run on one core)."""
from __future__ import annotations

import importlib
import inspect
import os
import shutil
import subprocess
import sys

import pytest
from lesson_tools import ROOT, lesson_path, printed

pytestmark = pytest.mark.slow

LESSONS = {"04": "04_how_a_graph_runs.ipynb", "05": "05_data_parallelism.ipynb",
           "06": "06_model_parallelism.ipynb", "09": "09_in_graph_vs_between_graph.ipynb",
           "10": "10_sync_vs_async.ipynb"}


def _why_not_one_core() -> str | None:
    """Why this machine cannot show the lessons on one core of several, or None."""
    if shutil.which("taskset") is None:
        return "taskset (util-linux) is not installed"
    if len(os.sched_getaffinity(0)) < 2:
        return "this process may use one core anyway: every lesson test runs on one core"
    return None


def _claims(number: str) -> list:
    """The claim tests of ``test_lesson_NN`` that take only the executed notebook."""
    module = importlib.import_module(f"test_lesson_{number}")
    return [fn for name, fn in vars(module).items()
            if name.startswith("test_") and callable(fn)
            and list(inspect.signature(fn).parameters) == ["lesson"]]


@pytest.mark.parametrize("number", sorted(LESSONS))
def test_lesson_runs_and_holds_its_claims_on_one_core(number, tmp_path):
    why = _why_not_one_core()
    if why:
        pytest.skip(why)
    copy = tmp_path / LESSONS[number]
    shutil.copyfile(lesson_path(LESSONS[number], "en"), copy)
    done = subprocess.run(
        ["taskset", "-c", "0", sys.executable, str(ROOT / "tests/lessons/execute.py"), str(copy)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    claims = _claims(number)
    assert claims, f"test_lesson_{number} has no claim test on the notebook alone"
    for claim in claims:
        claim(copy)
    if number == "05":      # its speed-up claim has a one-core branch: it ran
        assert "CPU cores this kernel may use: 1\n" in printed(copy, "results = throughput()")
