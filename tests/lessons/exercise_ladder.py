"""The feedback ladder of a build exercise, walked as a learner would: three wrong tries, then
the right one; what each try shows, and that no line of the lesson's solution code appears in
any feedback before the learner asks for it (``solution``). The exercise tests' shared
fixtures too: ``fresh_tries`` (autouse where imported) and ``cluster`` (one LocalCluster, 1 ps
and 2 workers, per module that uses it; ``conftest`` offers it to every module)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import tfteach as tf
from tfteach.lessons import check, solution
from tfteach.notebook import exercises


@pytest.fixture(autouse=True)
def fresh_tries() -> Iterator[None]:
    """Each test counts tries from none, and leaves none counted."""
    exercises.forget_tries()
    yield
    exercises.forget_tries()


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """One LocalCluster (task processes on loopback) for a whole module."""
    started = tf.cluster.LocalCluster(ps=1, workers=2)
    yield started
    started.close()


def solution_lines(name: str) -> list[str]:
    """The telling lines of the lesson's solution code of ``name`` (not its check, comments
    or ``def`` lines; of a ``return`` line, what it returns), without leaving the solution
    revealed."""
    code = [src for kind, src in solution(name).cells if kind == "code"]
    exercises.forget_tries()
    exercises._revealed.discard(name)
    lines = [line.strip().removeprefix("return ") for src in code for line in src.splitlines()]
    return [line for line in lines if len(line) >= 16 and "check(" not in line
            and not line.startswith(("#", "def "))]


def assert_wrong_wrong_wrong_right(name: str, wrongs: tuple[Any, ...], right: Any,
                                   prepare: Callable[[Any], Any] | None = None,
                                   **context: Any) -> list[str]:
    """Try 1 shows the direction and how to ask for the solution, try 2 the idea and its
    section (no code), try 3 the worked hint; never the answer or a solution line; then the
    right build passes. ``context`` goes to each check (``cluster=``); ``prepare``, where
    given, turns each try into what is submitted, just before its check (a learner who
    changes one thing and submits another: 11.2's second server and first). Returns the
    three wrong tries' feedback texts."""
    info = exercises.exercise(name)
    lines = solution_lines(name)
    assert lines, f"the lesson has solution code for {name}"
    submit = prepare or (lambda build: build)
    texts = [check(submit(wrong), exercise=name, **context).text() for wrong in wrongs]
    assert info["direction"] in texts[0] and f"solution('{name}')" in texts[0]
    assert info["concept"] in texts[1] and info["section"] in texts[1]
    assert info["hint"] in texts[2] and info["direction"] not in texts[2]
    for text in texts:
        assert "The answer" not in text
        assert not [line for line in lines if line in text]
    assert "`" not in texts[1].split("Hint:", 1)[1].replace(info["section"], "")
    assert exercises.wrong_tries(name) == 3
    assert check(submit(right), exercise=name, **context), "right after three wrong tries"
    return texts
