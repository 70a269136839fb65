"""The lessons' exercises, read from the tracked notebooks (no kernel): no check call gives its
expected value as a literal, every check names a known exercise, every exercise has solution
cells that are collapsed and marked (their code cells start with ``%%solution``, so a
learner's Run All does not run them), and the stored feedback is the first try's (a direction,
not the answer) under an exercise and "Correct" under its solution (``execute.py`` runs the
solutions); in every language (the feedback in the lesson's language)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from lesson_tools import LESSONS, lesson_or_skip, message_pattern, output_texts

from tfteach.notebook import exercises

NAMES = sorted(p.name for p in LESSONS.glob("[0-9][0-9]_*.ipynb"))
CHECKS = {"check", "check_placement"}
# Names an expression may use and still be a literal: modules of constants and builtins.
CONSTANT_NAMES = {"math", "np", "numpy", "float", "int", "str", "tuple", "list", "dict", "set",
                  "round", "abs", "len", "pow", "sum", "min", "max", "None", "True", "False"}


def _code(cell) -> ast.Module:
    """A code cell parsed as Python, its magic lines (``%``, ``!``) blanked."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line
             for line in cell.source.splitlines()]
    return ast.parse("\n".join(lines))


def _code_cells(notebook: Path) -> list:
    return [c for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]


def _assignments(cells: list) -> dict[str, list[ast.expr]]:
    """Every ``name = value`` of the notebook's code cells, by name."""
    found: dict[str, list[ast.expr]] = {}
    for cell in cells:
        for node in ast.walk(_code(cell)):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, []).append(node.value)
    return found


def is_literal(node: ast.expr, assigned: dict[str, list[ast.expr]], depth: int = 0) -> bool:
    """Whether ``node`` is a value written out in the source: only constants, containers and
    arithmetic on them, or a name only ever assigned such a value."""
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    others = [n for n in names if n not in CONSTANT_NAMES]
    if not others:
        return True
    if depth > 3:
        return False
    return all(n in assigned and all(is_literal(v, assigned, depth + 1) for v in assigned[n])
               for n in others)


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)


def check_calls(cell) -> list[ast.Call]:
    """The ``check``/``check_placement`` calls of a code cell."""
    return [n for n in ast.walk(_code(cell)) if isinstance(n, ast.Call) and _called(n) in CHECKS]


def expected_values(call: ast.Call) -> list[ast.expr]:
    """The arguments of a check call that give what is expected."""
    given = list(call.args[1:2])
    return given + [k.value for k in call.keywords if k.arg in ("expected", "value")]


def _exercise_of(call: ast.Call) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == "exercise" and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return None


def _solution_of(cell) -> str | None:
    return cell.metadata.get("tfteach", {}).get(exercises.SOLUTION_KEY)


def _lesson_number(notebook: Path) -> int:
    return int(notebook.name[:2])


@pytest.fixture(params=NAMES, ids=[name[:-len(".ipynb")] for name in NAMES])
def notebook(request, lang) -> Path:
    """Each lesson, in ``lang``."""
    return lesson_or_skip(request.param, lang)


def test_no_check_call_gives_its_expected_value_as_a_literal(notebook):
    cells = _code_cells(notebook)
    assigned = _assignments(cells)
    found = [ast.unparse(call) for cell in cells for call in check_calls(cell)
             if any(is_literal(value, assigned) for value in expected_values(call))]
    assert found == []


def test_the_literal_scan_finds_literals_and_names_assigned_them():
    cell = nbformat.v4.new_code_cell(
        "wanted = {'a': '/gpu:0'}\nimport math\n"
        "check(rows, 120)\ncheck_placement(p, wanted)\ncheck(x, value=[[11 + math.log(2)]])\n"
        "check(n, len(tf.trainable_variables()))\ncheck(rows, exercise='5.2')")
    assigned = _assignments([cell])
    flagged = [_called(c) for c in check_calls(cell)
               if any(is_literal(v, assigned) for v in expected_values(c))]
    assert flagged == ["check", "check_placement", "check"]


def test_every_check_call_names_an_exercise_of_its_lesson(notebook):
    named = [_exercise_of(call) for cell in _code_cells(notebook) for call in check_calls(cell)]
    assert named and all(name in exercises.names() for name in named), named
    assert {int(name.split(".")[0]) for name in named} == {_lesson_number(notebook)}


def test_every_exercise_has_collapsed_solution_cells(notebook):
    cells = nbformat.read(notebook, as_version=4).cells
    lesson = _lesson_number(notebook)
    wanted = {n for n in exercises.names() if int(n.split(".")[0]) == lesson}
    marked = [c for c in cells if _solution_of(c)]
    assert {_solution_of(c) for c in marked} == wanted
    for cell in marked:
        hidden = cell.metadata.get("jupyter", {})
        assert hidden.get("source_hidden") is True, cell.source[:60]
        if cell.cell_type == "code":
            assert hidden.get("outputs_hidden") is True, cell.source[:60]
            assert cell.source.startswith(f"%%solution {_solution_of(cell)}\n"), cell.source[:60]


# What a first wrong try says after its direction, and what only later tries show: the answer.
FIRST_TRY = ("a stronger hint comes with the next wrong try; the solution only when you ask for "
             "it: {ask}")
ANSWERS = ("expected {expected}, got {actual}", "the value is {got}, expected {expected}",
           "the whole solution, only if you want it: {ask}", "The answer: {answer}")


def test_stored_feedback_is_the_first_try_under_an_exercise_and_correct_under_its_solution(
        notebook, lang):
    correct = message_pattern("Correct: {what}. Well done!", lang)
    not_yet = message_pattern("Not yet: {what}.", lang)
    for cell in _code_cells(notebook):
        names = [_exercise_of(call) for call in check_calls(cell)]
        if not names or "def " in cell.source and not cell.outputs:
            continue
        text = output_texts(cell.outputs)
        if _solution_of(cell):
            assert re.search(correct, text) and not re.search(not_yet, text), cell.source[:80]
        else:
            assert re.search(not_yet, text), cell.source[:80]
            assert not [m for m in ANSWERS if re.search(message_pattern(m, lang), text)], text
            ask = re.escape(f"`tfteach.lessons.solution('{names[0]}')`")
            assert re.search(message_pattern(FIRST_TRY, lang, ask=ask), text), text
