"""Run All computes no answers: a solution cell (``%%solution N.M``) runs its code only after
the learner asked for that solution in the kernel (``tfteach.lessons.solution``); until then it
prints a note. With ``TFTEACH_RUN_SOLUTIONS=1`` every solution runs, and one that does not pass
its check fails its cell. Each notebook runs in a real kernel, top to bottom, as Run All does."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from lesson_tools import lesson_env, output_texts
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

SOLUTION = "%%solution 5.2\nrows_for_slow_gpu = 120\nprint('the answer is', rows_for_slow_gpu)"
AFTER = "print('defined:', 'rows_for_slow_gpu' in globals())"


def run_all(cells: list[str], tmp_path: Path, **env: str) -> list[str]:
    """Each cell's printed text, after running ``cells`` top to bottom in a fresh kernel."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env={**lesson_env(), **env})
    return [output_texts(cell.outputs) for cell in nb.cells]


def test_run_all_prints_a_note_and_runs_no_solution(tmp_path):
    texts = run_all(["%load_ext tfteach", SOLUTION, AFTER], tmp_path)
    assert "the answer is" not in texts[1] and "120" not in texts[1]
    assert "tfteach.lessons.solution('5.2')" in texts[1]
    assert texts[2].strip() == "defined: False"


def test_a_solution_asked_for_runs_and_shows_without_its_magic_line(tmp_path):
    ask = "from tfteach.lessons import solution\nprint(solution('5.2').text())"
    texts = run_all(["%load_ext tfteach", ask, SOLUTION, AFTER], tmp_path)
    assert "rows_for_slow_gpu = 120" in texts[1] and "%%solution 5.2" not in texts[1]
    assert texts[2].strip() == "the answer is 120"
    assert texts[3].strip() == "defined: True"


def test_asking_for_one_solution_runs_no_other(tmp_path):
    ask = "from tfteach.lessons import solution\n_ = solution('5.1')"
    texts = run_all(["%load_ext tfteach", ask, SOLUTION, AFTER], tmp_path)
    assert texts[3].strip() == "defined: False"


def test_in_a_copy_without_solutions_the_cell_never_runs(tmp_path):
    (tmp_path / ".tfteach-no-solutions").write_text("")
    texts = run_all(["%load_ext tfteach", SOLUTION, AFTER], tmp_path, TFTEACH_RUN_SOLUTIONS="1")
    assert "5.2" in texts[1] and "the answer is" not in texts[1]
    assert texts[2].strip() == "defined: False"


def test_running_every_solution_runs_them_and_fails_on_a_solution_that_does_not_pass(tmp_path):
    passing = "%%solution 5.2\nfrom tfteach.lessons import check\ncheck(5 * 24, exercise='5.2')"
    texts = run_all(["%load_ext tfteach", SOLUTION, passing], tmp_path, TFTEACH_RUN_SOLUTIONS="1")
    assert texts[1].strip() == "the answer is 120" and "Correct" in texts[2]
    failing = "%%solution 5.2\nfrom tfteach.lessons import check\ncheck(7, exercise='5.2')"
    with pytest.raises(CellExecutionError, match="does not pass its check"):
        run_all(["%load_ext tfteach", failing], tmp_path, TFTEACH_RUN_SOLUTIONS="1")
