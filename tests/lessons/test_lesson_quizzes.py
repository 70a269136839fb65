"""The lessons' "why" questions, as the lessons hold them (no kernel): each lesson that has
questions (``tfteach.notebook.quizzes``) ends, in every language, with a "Why? Three
questions" cell, one ``tf.lessons.quiz`` cell per question in order, whose stored output is
the question in the notebook's language, and a reading list naming two to four of the papers
that fit the lesson; all of it before the clean-up cell where the lesson has one."""
from __future__ import annotations

import re

import nbformat
import pytest
from lesson_tools import LANGS, LESSONS, lesson_path

from tfteach.notebook import quizzes

QUIZZED = sorted({int(n.split(".")[0]) for n in quizzes.names()})
CASES = [(lang, nn) for lang in LANGS for nn in QUIZZED]
PAPERS = ["Dean", "Li ", "Chen", "Goyal", "Sergeev", "Abadi"]
CALL = re.compile(r'^tf\.lessons\.quiz\("(\d+\.Q\d)"\)$')


def _lesson(lang: str, nn: int) -> list:
    name = next(LESSONS.glob(f"{nn:02d}_*.ipynb")).name
    return nbformat.read(lesson_path(name, lang), as_version=4).cells


@pytest.mark.parametrize(("lang", "nn"), CASES, ids=[f"{lang}-{nn:02d}" for lang, nn in CASES])
def test_the_lesson_ends_with_three_questions_and_a_reading_list(lang, nn, monkeypatch):
    cells = _lesson(lang, nn)
    ids = [c.id for c in cells]
    start = ids.index(f"why-{nn:02d}")
    head, *asked, reading = cells[start:start + 5]
    assert head.cell_type == "markdown" and "quiz" in head.source
    names = [CALL.match(c.source).group(1) for c in asked]
    assert names == [n for n in quizzes.names() if n.split(".")[0] == str(nn)]
    monkeypatch.setenv("TFTEACH_LANG", lang)
    for cell, name in zip(asked, names, strict=True):
        assert cell.outputs[0]["data"]["text/plain"] == quizzes.Quiz(name).text()
    cited = [p for p in PAPERS if p in reading.source]
    assert reading.id == f"reading-{nn:02d}" and 2 <= len(cited) <= 4, cited
    rest = cells[start + 5:]
    assert all("quiz" not in c.source for c in rest if c.cell_type == "code")
    assert [c.cell_type for c in rest[:1]] in ([], ["markdown"]) and \
        all(c.cell_type == "code" for c in rest[1:]), \
        "only the clean-up section (its heading and code cells) may follow the questions"
