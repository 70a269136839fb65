"""``python tests/lessons/execute.py NOTEBOOK``, run from the repository root as the lessons'
README says, stores a lesson's outputs in place (of a lesson in any language, run in that
language); a failing cell leaves the notebook as it was. All run on copies in a temporary
folder, never on the real lessons."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from lesson_tools import (ROOT, assert_passes_nbval, correct, lesson_env, lesson_or_skip,
                          output_texts)

LESSON_NAME = "01_device_placement.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _execute(notebook: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "tests/lessons/execute.py", str(notebook)], cwd=ROOT,
        env=lesson_env(notebook.parent / "registry"), capture_output=True, text=True,
        timeout=600, check=False)


def _outputs_by_cell(nb: nbformat.NotebookNode) -> list[list[tuple]]:
    """Per code cell, each output's type and MIME types: what nbval compares, less values."""
    return [[(o.output_type, sorted(o.get("data", {}))) for o in cell.outputs]
            for cell in nb.cells if cell.cell_type == "code"]


@pytest.mark.slow
def test_stores_the_outputs_of_a_lesson_copy_that_nbval_then_accepts(lang, tmp_path):
    lesson = lesson_or_skip(LESSON_NAME, lang)
    lesson_bytes = lesson.read_bytes()
    blank = nbformat.reads(lesson_bytes.decode(), as_version=4)
    for cell in blank.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    copy = tmp_path / lesson.name
    nbformat.write(blank, copy)

    done = _execute(copy)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"{copy}: executed, outputs stored" in done.stdout
    stored = nbformat.read(copy, as_version=4)
    code = [cell for cell in stored.cells if cell.cell_type == "code"]
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1))
    assert _outputs_by_cell(stored) == _outputs_by_cell(nbformat.reads(lesson_bytes.decode(), 4))
    assert "widgets" not in stored.metadata, "no live widget state is saved"
    assert correct("the placement", lang) in output_texts(
        [o for cell in code for o in cell.outputs]), "the exercise's check ran in the language"
    assert lesson.read_bytes() == lesson_bytes, "the real lesson is untouched"
    assert_passes_nbval(copy, tmp_path)


def test_a_notebook_runs_in_the_language_its_metadata_names(tmp_path):
    notebook = tmp_path / "lesson.ipynb"
    nbformat.write(nbformat.v4.new_notebook(
        metadata={"tfteach": {"lang": "ru"}},
        cells=[nbformat.v4.new_code_cell("import os\nprint(os.environ['TFTEACH_LANG'])")]),
        notebook)
    env_lang = {**lesson_env(), "TFTEACH_LANG": "zh"}        # the caller's own is not used

    done = subprocess.run([sys.executable, "tests/lessons/execute.py", str(notebook)], cwd=ROOT,
                          env=env_lang, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    stored = nbformat.read(notebook, as_version=4)
    assert output_texts(stored.cells[0].outputs).strip() == "ru"


def test_a_failing_cell_leaves_the_notebook_unchanged_and_exits_1(tmp_path):
    notebook = tmp_path / "broken.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print('first cell ran')"),
        nbformat.v4.new_code_cell("1 / 0")]), notebook)
    before = notebook.read_bytes()

    done = _execute(notebook)
    assert done.returncode == 1
    assert f"{notebook}: a cell failed; the notebook is unchanged." in done.stderr
    assert "ZeroDivisionError" in done.stderr
    assert notebook.read_bytes() == before


def test_a_missing_notebook_is_refused_before_any_kernel_starts(tmp_path):
    done = _execute(tmp_path / "no_such_lesson.ipynb")
    assert done.returncode == 2
    assert "no_such_lesson.ipynb: no such notebook" in done.stderr
