"""The lessons' exercises: their answers and hints, the learner's wrong tries, and solutions.

A lesson never holds an exercise's expected value: its check either computes it from the
learner's own graph or run, or names the exercise (``check(x, exercise="5.2")``) and the
value comes from ``exercises.json`` here, beside what is checked and two hints:
``direction`` (after the first wrong try) and ``hint`` (stronger, after the second). The
answer itself is shown after ``TRIES_BEFORE_ANSWER`` wrong tries, or on request with
``tfteach.lessons.solution("5.2")``, which shows the lesson's solution cells: the cells
whose metadata says ``{"tfteach": {"solution": "5.2"}}`` (collapsed in JupyterLab, and left
out by ``tfteach lessons copy --no-solutions``). Wrong tries are counted per exercise for
as long as the kernel runs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tfteach import errors
from tfteach.i18n import language, tr

ANSWERS = Path(__file__).with_name("exercises.json")
TRIES_BEFORE_ANSWER = 3
SOLUTION_KEY = "solution"

_wrong_tries: dict[str, int] = {}


@lru_cache(maxsize=1)
def _all() -> dict[str, dict[str, Any]]:
    return json.loads(ANSWERS.read_text(encoding="utf-8"))


def names() -> list[str]:
    """Every exercise's name, ``"lesson.number"``."""
    return list(_all())


def exercise(name: str) -> dict[str, Any]:
    """What ``exercises.json`` holds for ``name``: what, direction, hint, maybe answer."""
    try:
        return _all()[str(name)]
    except KeyError:
        raise errors.NotFoundError(
            f"There is no exercise {name!r}",
            hint=tr("exercises are named 'lesson.number', e.g. '5.2' for lesson 5's second; "
                    "the check cell of an exercise names it with exercise=...")) from None


def wrong_tries(name: str) -> int:
    """How many wrong tries ``name`` has had."""
    return _wrong_tries.get(name, 0)


def count_try(name: str, passed: bool) -> int:
    """Record one check of ``name``; the number of wrong tries so far."""
    if not passed:
        _wrong_tries[name] = _wrong_tries.get(name, 0) + 1
    return _wrong_tries.get(name, 0)


def forget_tries(name: str | None = None) -> None:
    """Start counting again, for one exercise or (``None``) for all."""
    if name is None:
        _wrong_tries.clear()
    else:
        _wrong_tries.pop(name, None)


def lessons_folder(lang: str = "en") -> Path:
    """Where the lessons are, in ``lang`` (``en``, ``ko``, ``zh`` or ``ru``): inside the
    installed package, else the repository checkout. The English ones are at the top, each
    translation in a folder named by its language."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "lessons_data", package.parent / "lessons"):
        folder = candidate if lang == "en" else candidate / lang
        if folder.is_dir() and any(folder.glob("*.ipynb")):
            return folder
    raise FileNotFoundError("tfteach's lessons were not found (neither in the installed package "
                            "nor next to it). Reinstall tfteach from its repository.")


def is_solution(cell: dict) -> bool:
    """Whether a notebook cell (nbformat JSON) is part of an exercise's solution."""
    return bool(cell.get("metadata", {}).get("tfteach", {}).get(SOLUTION_KEY))


@dataclass
class Solution:
    """An exercise's solution: its cells from the lesson (markdown and code), and its answer."""

    name: str
    cells: list[tuple[str, str]] = field(default_factory=list)
    answer: Any = None

    def text(self) -> str:
        parts = [tr("Solution of exercise {name}:", name=self.name)]
        for kind, source in self.cells:
            parts.append(f"```python\n{source}\n```" if kind == "code" else source)
        if self.answer is not None:
            parts.append(tr("The answer: {answer}", answer=f"`{self.answer!r}`"))
        return "\n\n".join(parts)

    def _repr_markdown_(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()


def solution(name: str) -> Solution:
    """The solution of exercise ``name`` (e.g. ``"10.2"``), from its lesson's solution cells."""
    info = exercise(name)
    lesson = int(str(name).split(".")[0])
    found = Solution(str(name), answer=info.get("answer"))
    for path in sorted(_lessons_in_language().glob(f"{lesson:02d}_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell.get("metadata", {}).get("tfteach", {}).get(SOLUTION_KEY) == str(name):
                source = cell["source"]
                found.cells.append((cell["cell_type"],
                                    "".join(source) if isinstance(source, list) else source))
    return found


def _lessons_in_language() -> Path:
    """The learner's language's lessons, or the English ones where it has none."""
    try:
        return lessons_folder(language())
    except FileNotFoundError:
        return lessons_folder()
