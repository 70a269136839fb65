"""``tfteach lessons grade``, run as the teacher runs it (a process), on a learner's copy made by
``tfteach lessons copy``: each notebook runs in a real kernel, and the table (and CSV) gives
every exercise of the lesson, passed or not, with the wrong tries the learner made while
working in that copy. A notebook that runs past the time limit is stopped and said so."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tfteach.notebook import exercises

pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[2]
LESSON = "01_device_placement.ipynb"
WRONG_TOWERS = ("from types import SimpleNamespace as Cell\n"
                "from tfteach.lessons import check_placement\n"
                "for device in ('/cpu:0', '/gpu:1'):\n"
                "    print(check_placement(Cell(devices={'sum_0': device, 'sum_1': device, "
                "'total': '/cpu:0'}), exercise='1.2').passed)\n")


def tfteach(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TFTEACH_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "tfteach.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def learner_copy(folder: Path) -> Path:
    """A copy made by ``tfteach lessons copy``, with lesson 1 only, from its setup cell to its
    exercises (what comes between, and the other lessons, would only make the test slower)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    done = tfteach("lessons", "copy", str(folder), cwd=folder.parent)
    assert done.returncode == 0, done.stderr
    for notebook in folder.glob("*.ipynb"):
        if notebook.name != LESSON:
            notebook.unlink()
    edit_cells(folder / LESSON, skip_to_the_exercises)
    return folder / LESSON


def skip_to_the_exercises(cells: list) -> None:
    first = next(i for i, c in enumerate(cells) if "## Exercise 1" in "".join(c["source"]))
    del cells[3:first]


def edit_cells(notebook: Path, edit) -> None:
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    edit(nb["cells"])
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def answer_1_1_right(cells: list) -> None:
    """The learner writes the solution's placement into exercise 1.1's cell."""
    def source(cell):
        return "".join(cell["source"])
    solution = next(c for c in cells if c["metadata"].get("tfteach", {}).get("solution") == "1.1"
                    and "%%placement" in source(c))
    exercise = next(c for c in cells if not exercises.is_solution(c)
                    and source(c).startswith("%%placement --run\nx = tf.constant([[1.0, 2.0]]"))
    exercise["source"] = exercises.without_magic(source(solution))


def test_grade_runs_a_learners_copy_and_prints_each_exercise_with_the_tries(tmp_path):
    notebook = learner_copy(tmp_path / "class" / "alice")
    edit_cells(notebook, answer_1_1_right)
    worked = subprocess.run([sys.executable, "-c", WRONG_TOWERS], cwd=notebook.parent,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                            text=True, timeout=120, check=False)
    assert worked.stdout.split() == ["False", "False"], worked.stderr

    solutions = [c for c in json.loads(notebook.read_text())["cells"] if exercises.is_solution(c)]
    assert {c["metadata"]["tfteach"]["solution"] for c in solutions} == {"1.1", "1.2"}

    done = tfteach("lessons", "grade", "class", "--csv", "grades.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["alice", LESSON, "1.1", "passed", "0"] in rows
    assert ["alice", LESSON, "1.2", "not", "yet", "2"] in rows, "its solution cells did not run"
    assert "alice: 1 of 2 exercises passed" in done.stdout
    # the lesson's 'why' questions are listed apart; left unanswered, none counts as right
    assert "alice: 0 of 3 'why' questions answered right" in done.stdout
    with (tmp_path / "grades.csv").open() as table:
        assert list(csv.reader(table))[1:] == [["alice", LESSON, "1.1", "1", "0"],
                                               ["alice", LESSON, "1.2", "0", "2"]] + \
            [["alice", LESSON, f"1.Q{n}", "", "0"] for n in (1, 2, 3)]
    kept = json.loads((notebook.parent / exercises.TRIES_FILE).read_text())
    assert kept == {"1.2": 2}, "grading adds no tries of its own"


def test_grade_stops_a_notebook_at_the_time_limit(tmp_path):
    notebook = learner_copy(tmp_path / "bob")
    edit_cells(notebook, lambda cells: cells.insert(
        0, {"cell_type": "code", "execution_count": None, "id": "stuck", "metadata": {},
            "outputs": [], "source": "import time\ntime.sleep(600)"}))

    done = tfteach("lessons", "grade", str(notebook), "--timeout", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["bob", LESSON, "1.1", "timed", "out", "0"] in rows
    assert ["bob", LESSON, "1.2", "timed", "out", "0"] in rows


def test_grade_goes_on_when_a_notebook_ends_its_own_kernel(tmp_path):
    notebook = learner_copy(tmp_path / "carol")
    edit_cells(notebook, lambda cells: cells.insert(
        0, {"cell_type": "code", "execution_count": None, "id": "exits", "metadata": {},
            "outputs": [], "source": "import os\nos._exit(3)"}))

    done = tfteach("lessons", "grade", str(tmp_path / "carol"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["carol", LESSON, "1.1", "not", "checked", "0"] in rows
    assert "carol: 0 of 2 exercises passed" in done.stdout
