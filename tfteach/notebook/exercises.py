"""The lessons' exercises: their answers and hints, the learner's wrong tries, and solutions.

A lesson never holds an exercise's expected value: its check either computes it from the
learner's own graph or run, or names the exercise (``check(x, exercise="5.2")``) and the
value comes from ``exercises.json`` here, beside what is checked and the feedback ladder:
``direction`` (the first wrong try), ``concept`` and ``section`` (the second: the idea and
where the lesson teaches it, never code) and ``hint`` (the third and later: a worked hint).
The answer is shown only on request, with ``tfteach.lessons.solution("5.2")``, which shows
the lesson's solution cells: the cells whose metadata says
``{"tfteach": {"solution": "5.2"}}`` (collapsed in JupyterLab, and left out by ``tfteach
lessons copy --no-solutions``, whose copy turns the request off: ``solutions_allowed``).
A solution code cell starts with ``%%solution 5.2`` (``SOLUTION_MAGIC``): Run All does not run
its code, only a note, until the learner asked for that solution (``revealed``), so nobody
gets answers computed for them; ``TFTEACH_RUN_SOLUTIONS=1`` runs them all (a teacher checking
the solutions; the lessons' stored outputs are made so), and each must then pass its check.
Wrong tries are counted per exercise for as long as the kernel runs; a submission equal to
the previous one, or to the exercise's untouched ``starter``, is not a try (``fingerprint``:
a server submitted is never equal, since a try changes another task). In a copy made by
``tfteach lessons copy`` (its folder holds ``COPY_FILE``) each wrong try is also added to the
copy's ``TRIES_FILE``, across kernels, for ``tfteach lessons grade`` (not while it grades:
``TFTEACH_GRADING``).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tfteach import errors
from tfteach.i18n import language, tr

ANSWERS = Path(__file__).with_name("exercises.json")
TRIES_BEFORE_WORKED_HINT = 3
SOLUTION_KEY = "solution"
NO_SOLUTIONS_FILE = ".tfteach-no-solutions"    # written by ``lessons copy --no-solutions``
NO_SOLUTIONS_ENV = "TFTEACH_NO_SOLUTIONS"
RUN_SOLUTIONS_ENV = "TFTEACH_RUN_SOLUTIONS"
COPY_FILE = ".tfteach-lessons"              # written by ``lessons copy``: a learner's copy
TRIES_FILE = ".tfteach-tries.json"          # in a copy: {exercise: wrong tries}
GRADING_ENV = "TFTEACH_GRADING"
SOLUTION_MAGIC = "%%solution"

_wrong_tries: dict[str, int] = {}
_last_seen: dict[str, str] = {}
_passed: dict[str, bool] = {}
_revealed: set[str] = set()


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


def count_try(name: str, passed: bool, seen: str | None = None) -> int:
    """Record one check of ``name``; which wrong try this is (0 when it passed). ``seen`` is
    the submission's ``fingerprint``: one equal to the previous submission, or to the
    exercise's untouched ``starter``, is not counted (it still gets the first try's
    feedback at least)."""
    repeat = seen is not None and seen == _last_seen.get(name)
    starter = seen is not None and seen == fingerprint(_all().get(name, {}).get("starter"))
    if seen is not None:
        _last_seen[name] = seen
    _passed[name] = passed
    if not passed and not repeat and not starter:
        _wrong_tries[name] = _wrong_tries.get(name, 0) + 1
        _record_try(name)
    return 0 if passed else max(_wrong_tries.get(name, 0), 1)


def _marked_folder(marker: str) -> Path | None:
    """The folder of the kernel (or one above it) that holds the file ``marker``."""
    here = Path.cwd()
    return next((f for f in (here, *here.parents) if (f / marker).exists()), None)


def _record_try(name: str) -> None:
    """Add one wrong try of ``name`` to the learner's copy's ``TRIES_FILE``."""
    folder = _marked_folder(COPY_FILE)
    if folder is None or os.environ.get(GRADING_ENV, "") not in ("", "0"):
        return
    kept = recorded_tries(folder)
    kept[name] = kept.get(name, 0) + 1
    try:
        (folder / TRIES_FILE).write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    except OSError:
        pass                        # a read-only copy: the kernel's count still works


def recorded_tries(folder: Path) -> dict[str, int]:
    """The wrong tries kept in the copy ``folder`` (``{}`` where none are)."""
    try:
        kept = json.loads((folder / TRIES_FILE).read_text(encoding="utf-8"))
        return {str(k): int(v) for k, v in kept.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def fingerprint(value: Any) -> str | None:
    """A submission's fingerprint: its ``repr`` with tuples as lists; ``None`` for none, and
    for a server (a try changes the other tasks, which its ``repr`` does not show: each
    check of a server is a try)."""
    if value is None or hasattr(value, "server_def"):
        return None
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, os.PathLike) and os.path.isfile(value):   # a file: what it holds
        return repr((os.fspath(value), Path(value).read_bytes()))
    if hasattr(value, "get_operations"):          # a graph: what it holds, not its identity
        return repr([(op.name, op.type, op.device) for op in value.get_operations()])
    return repr(value) if not callable(value) else _code_print(value)


def _code_print(func: Any) -> str:
    """A function's code, names and default arguments (the check may call it without
    them: a changed default is a changed submission)."""
    code = getattr(func, "__code__", None)
    defaults = (getattr(func, "__defaults__", None), getattr(func, "__kwdefaults__", None))
    if code is None:
        return repr(func)
    return repr((code.co_code, code.co_consts, code.co_names, defaults, _settings(func)))


def _settings(func: Any) -> list:
    """What ``func`` closes over and, for a method, its object's attributes: plain values as
    they are, anything else by its type (two setters from ``replica_device_setter`` differ by
    their worker device; a counter that a check moves leaves the submission the same)."""
    cells = []
    for cell in getattr(func, "__closure__", None) or ():
        try:
            cells.append(_plain_setting(cell.cell_contents))
        except ValueError:                  # a cell not filled yet
            cells.append(None)
    bound = getattr(func, "__self__", None)
    attributes = sorted(vars(bound).items()) if hasattr(bound, "__dict__") else []
    return cells + [(key, _plain_setting(value)) for key, value in attributes]


def _plain_setting(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, tuple):
        return tuple(_plain_setting(v) for v in value)
    return type(value).__name__


def forget_tries(name: str | None = None) -> None:
    """Start counting again, for one exercise or (``None``) for all."""
    for state in (_wrong_tries, _last_seen, _passed):
        if name is None:
            state.clear()
        else:
            state.pop(name, None)


def progress() -> dict[str, dict[str, Any]]:
    """Every exercise checked in this kernel: ``{name: {"passed": the last check passed,
    "tries": wrong tries}}`` (what ``tfteach lessons grade`` reads from a learner's run)."""
    return {name: {"passed": passed, "tries": wrong_tries(name)}
            for name, passed in sorted(_passed.items())}


def solutions_allowed() -> bool:
    """Whether ``solution()`` may show an answer: not in a copy made with ``tfteach lessons
    copy --no-solutions`` (its folder, where the kernel runs, holds ``NO_SOLUTIONS_FILE``),
    nor where ``TFTEACH_NO_SOLUTIONS`` is set."""
    if os.environ.get(NO_SOLUTIONS_ENV, "") not in ("", "0"):
        return False
    return _marked_folder(NO_SOLUTIONS_FILE) is None


def revealed(name: str) -> bool:
    """Whether the solution cells of ``name`` may run: the learner asked for the solution in
    this kernel (``solution``), or ``TFTEACH_RUN_SOLUTIONS`` asks to run every solution."""
    return solutions_allowed() and (name in _revealed or running_every_solution())


def running_every_solution() -> bool:
    """Whether ``TFTEACH_RUN_SOLUTIONS`` asks to run every solution cell."""
    return os.environ.get(RUN_SOLUTIONS_ENV, "") not in ("", "0")


def hidden_solution_note(name: str) -> str:
    """What a solution cell prints instead of running, while ``name`` is not ``revealed``."""
    if not solutions_allowed():
        return tr("The solution of exercise {name} is not available in this copy of the "
                  "lessons; this cell did not run.", name=name)
    return tr("This cell holds the solution of exercise {name} and did not run. Try the "
              "exercise first; to see and run the solution, call {ask}, then run this cell "
              "again.", name=name, ask=f"`tfteach.lessons.solution('{name}')`")


def without_magic(source: str) -> str:
    """A solution cell's code without its ``%%solution`` line."""
    first, _, rest = source.partition("\n")
    return rest if first.startswith(SOLUTION_MAGIC) else source


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
        if any(kind == "code" for kind, _ in self.cells):
            parts.append(tr("The lesson's solution cells of exercise {name} (they start with "
                            "`%%solution`) now run when you run them.", name=self.name))
        return "\n\n".join(parts)

    def _repr_markdown_(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return self.text()


def solution(name: str) -> Solution:
    """The solution of exercise ``name`` (e.g. ``"10.2"``), from its lesson's solution cells;
    refused (PermissionDeniedError) in a copy of the lessons made without solutions."""
    info = exercise(name)
    if not solutions_allowed():
        raise errors.PermissionDeniedError(
            f"The solution of exercise {name} is not available in this copy of the lessons",
            hint=tr("your teacher made this copy without solutions: ask them, or use the "
                    "feedback of the check and the lesson's sections"))
    _revealed.add(str(name))
    lesson = int(str(name).split(".")[0])
    found = Solution(str(name), answer=info.get("answer"))
    for path in sorted(_lessons_in_language().glob(f"{lesson:02d}_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell.get("metadata", {}).get("tfteach", {}).get(SOLUTION_KEY) == str(name):
                source = cell["source"]
                source = "".join(source) if isinstance(source, list) else source
                found.cells.append((cell["cell_type"], without_magic(source)))
    return found


def _lessons_in_language() -> Path:
    """The learner's language's lessons, or the English ones where it has none."""
    try:
        return lessons_folder(language())
    except FileNotFoundError:
        return lessons_folder()
