"""Grading learners' lessons: what ``tfteach lessons grade PATH`` runs and prints.

``PATH`` is a learner's copy of the lessons (a folder of notebooks, made by ``tfteach lessons
copy``), a folder holding one such copy per learner, or one notebook. Each notebook runs top
to bottom in a fresh kernel started in its folder, in the notebook's language, with a time
limit for the whole notebook; cells that fail do not stop it (a learner's notebook may hold
mistakes). Solution cells do not run (nothing is revealed in a fresh kernel, and
``TFTEACH_RUN_SOLUTIONS`` is unset), so only the learner's own answers count. At the end the
kernel reports every exercise it checked (``exercises.progress``), and every "why" question
answered (``quizzes``: they count like exercises).

A row per exercise of each notebook's lesson (its file name starts with the lesson's number):
whether its last check in that run passed (``None``: never checked, e.g. a cell before it
failed, the kernel died or the time ran out), and the wrong tries the learner made while working, from the
copy's record (``exercises.recorded_tries``). nbclient comes with JupyterLab and is imported
only here.
"""
from __future__ import annotations

import csv
import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tfteach.i18n import tr
from tfteach.notebook import exercises, quizzes

REPORT_MARK = "TFTEACH-GRADE "
REPORT_CELL = ("import json as _json\nfrom tfteach.notebook import exercises as _exercises\n"
               f"print({REPORT_MARK!r} + _json.dumps(_exercises.progress()))")


@dataclass
class Row:
    """One exercise of one learner's notebook."""

    learner: str
    notebook: str
    exercise: str
    passed: bool | None
    tries: int
    timed_out: bool = False

    def result(self) -> str:
        if self.passed is None:
            return tr("timed out") if self.timed_out else tr("not checked")
        return tr("passed") if self.passed else tr("not yet")


def learners(path: Path) -> list[tuple[str, Path]]:
    """``(learner, folder or notebook)`` pairs: ``path`` itself when it holds notebooks (or is
    one), else each folder in it that holds notebooks, named by the folder."""
    if path.is_file() or any(path.glob("*.ipynb")):
        return [(path.resolve().parent.name if path.is_file() else path.resolve().name, path)]
    return [(sub.name, sub) for sub in sorted(path.iterdir())
            if sub.is_dir() and any(sub.glob("*.ipynb"))]


def grade(path: Path, limit: float = 300.0) -> list[Row]:
    """Run every notebook of every learner under ``path``; a row per exercise."""
    rows = []
    for learner, place in learners(path):
        notebooks = [place] if place.is_file() else sorted(place.glob("[0-9]*.ipynb"))
        tries = exercises.recorded_tries(place.parent if place.is_file() else place)
        for notebook in notebooks:
            progress, timed_out = run_notebook(notebook, limit)
            for name in _exercises_of(notebook, progress):
                rows.append(Row(learner, notebook.name, name,
                                progress.get(name, {}).get("passed"), tries.get(name, 0),
                                timed_out))
    return rows


def _exercises_of(notebook: Path, progress: dict) -> list[str]:
    prefix = notebook.name.split("_", 1)[0]
    lesson = str(int(prefix)) if prefix.isdigit() else None
    names = [n for n in exercises.names() + quizzes.names() if n.split(".")[0] == lesson]
    return names + [n for n in progress if n not in names]


def run_notebook(notebook: Path, limit: float) -> tuple[dict, bool]:
    """Run ``notebook`` in a fresh kernel for at most ``limit`` seconds: the kernel's
    ``exercises.progress()``, and whether the time ran out."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(
        nb, timeout=int(limit), allow_errors=True, interrupt_on_timeout=True,
        error_on_timeout={"ename": "TimeoutError", "evalue": "", "traceback": []},
        resources={"metadata": {"path": str(notebook.parent.resolve())}})
    deadline = time.monotonic() + limit
    with client.setup_kernel(env=_kernel_env(nb), stderr=subprocess.DEVNULL):
        try:
            timed_out = _run_cells(client, nb, deadline)
            nb.cells.append(nbformat.v4.new_code_cell(REPORT_CELL))
            client.timeout = 30
            report = client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
        except DeadKernelError:         # the notebook ended its own kernel: nothing to report
            return {}, False
    return _read_report(report), timed_out


def _run_cells(client, nb, deadline: float) -> bool:
    """Run the code cells until the deadline; whether it passed first."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        left = deadline - time.monotonic()
        if left < 1:
            return True
        client.timeout = int(left)
        client.execute_cell(cell, index)
    return time.monotonic() >= deadline


def _kernel_env(nb) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != exercises.RUN_SOLUTIONS_ENV}
    env[exercises.GRADING_ENV] = "1"
    env["TFTEACH_LANG"] = nb.metadata.get("tfteach", {}).get("lang", "en")
    return env


def _read_report(cell) -> dict:
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    for line in text.splitlines():
        if line.startswith(REPORT_MARK):
            return json.loads(line[len(REPORT_MARK):])
    return {}


def table(rows: list[Row]) -> str:
    """The rows as a text table, then per learner: exercises passed of all, and (where the
    lessons ask any) 'why' questions answered right of all."""
    head = [tr("learner"), tr("notebook"), tr("exercise"), tr("result"), tr("wrong tries")]
    body = [[r.learner, r.notebook, r.exercise, r.result(), str(r.tries)] for r in rows]
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
             for line in [head, *body]]
    questions = set(quizzes.names())
    for learner in dict.fromkeys(r.learner for r in rows):
        own = [r for r in rows if r.learner == learner and r.exercise not in questions]
        asked = [r for r in rows if r.learner == learner and r.exercise in questions]
        lines.append(tr("{learner}: {passed} of {total} exercises passed", learner=learner,
                        passed=sum(bool(r.passed) for r in own), total=len(own)))
        if asked:
            lines.append(tr("{learner}: {right} of {total} 'why' questions answered right",
                            learner=learner, right=sum(bool(r.passed) for r in asked),
                            total=len(asked)))
    return "\n".join(lines)


def write_csv(rows: list[Row], path: Path) -> None:
    """The rows as CSV: learner, notebook, exercise, passed (1, 0 or empty), wrong_tries."""
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["learner", "notebook", "exercise", "passed", "wrong_tries"])
        for r in rows:
            writer.writerow([r.learner, r.notebook, r.exercise,
                             "" if r.passed is None else int(r.passed), r.tries])
