"""The lessons' "why" questions: multiple choice, with an explanation for every choice.

    tf.lessons.quiz("8.Q1")               # the question: radio buttons and a Check button
    tf.lessons.quiz("8.Q1", answer="b")   # without widgets: the verdict and its explanation

A lesson's quiz cells hold only the question's name, so they are byte-identical in every
language; the text comes from ``quizzes/<lang>.json`` here (``{name: {"question": str,
"choices": {letter: {"text": str, "why": str}}}}``), in the learner's language
(``tfteach.i18n.language``: ``TFTEACH_LANG`` or the notebook's metadata), English where a
language lacks a question. Each choice's ``why`` explains it: a wrong one names the
misconception behind it. Which choice is right is not in that data: ``quizzes/keys.json``
keeps, per question, a digest of its name and the right letter (``digest``), so printing the
data shows no answer. An answer counts like an exercise's check (``exercises.count_try``),
so ``tfteach lessons grade`` reports quizzes beside the exercises.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tfteach import errors
from tfteach.i18n import join, language, tr
from tfteach.notebook import exercises

FOLDER = Path(__file__).with_name("quizzes")
KEYS = FOLDER / "keys.json"


def digest(name: str, letter: str) -> str:
    """What ``keys.json`` keeps for question ``name`` whose right choice is ``letter``."""
    return hashlib.sha256(f"tfteach-quiz:{name}:{letter}".encode()).hexdigest()[:24]


@lru_cache(maxsize=8)
def _texts(lang: str) -> dict[str, dict[str, Any]]:
    path = FOLDER / f"{lang}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


@lru_cache(maxsize=1)
def _keys() -> dict[str, str]:
    return json.loads(KEYS.read_text(encoding="utf-8"))


def names() -> list[str]:
    """Every question's name, ``"lesson.Qn"`` (e.g. ``"8.Q1"``)."""
    return list(_keys())


def question(name: str, lang: str | None = None) -> dict[str, Any]:
    """Question ``name`` in ``lang`` (default: the learner's), English where it is missing."""
    if str(name) not in _keys():
        raise errors.NotFoundError(
            f"There is no question {name!r}",
            hint=tr("questions are named 'lesson.Qn', e.g. '8.Q1' for lesson 8's first"))
    return _texts(lang or language()).get(str(name)) or _texts("en")[str(name)]


@dataclass
class Verdict:
    """The outcome of one answer: right or not, and the explanation of the chosen option."""

    name: str
    letter: str
    right: bool
    why: str

    def __bool__(self) -> bool:
        return self.right

    def text(self) -> str:
        head = (tr("Right: ({letter}).", letter=self.letter) if self.right
                else tr("Not quite: ({letter}) is not the best answer.", letter=self.letter))
        return f"{head} {self.why}"

    def html(self) -> str:
        from tfteach.notebook.palette import feedback_style
        from tfteach.notebook.style import inline_code

        style = feedback_style("success" if self.right else "error")
        return f"<div class='tfteach-check' style='{style}'>{inline_code(self.text())}</div>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text()}

    def __repr__(self) -> str:
        return self.text()


def check_answer(name: str, letter: str) -> Verdict:
    """Grade ``letter`` for question ``name`` and count it like an exercise's check."""
    info = question(name)
    letter = str(letter).strip().lower().strip("()")
    if letter not in info["choices"]:
        raise errors.InvalidArgumentError(
            f"Question {name} has no choice {letter!r}",
            hint=tr("answer with one of the letters {letters}",
                    letters=join(info["choices"])))
    right = digest(str(name), letter) == _keys()[str(name)]
    exercises.count_try(str(name), right, repr(letter))
    return Verdict(str(name), letter, right, info["choices"][letter]["why"])


@dataclass
class Quiz:
    """A question to show: radio buttons and a Check button where widgets run, its text
    everywhere else (only the data's words, so a lesson's stored output stays the same
    once the interface's messages are translated; the lesson says how to pass ``answer``)."""

    name: str

    def text(self) -> str:
        info = question(self.name)
        lines = [f"{self.name}. {info['question']}"]
        return "\n".join(lines + [f"  ({k}) {c['text']}" for k, c in info["choices"].items()])

    def widget(self) -> Any:
        """The question as ipywidgets: a VBox of the question, the choices, a Check button
        and an output area for the verdict."""
        import ipywidgets as widgets

        info = question(self.name)
        options = [(f"({k}) {c['text']}", k) for k, c in info["choices"].items()]
        choices = widgets.RadioButtons(options=options, value=None,
                                       layout=widgets.Layout(width="auto"))
        button = widgets.Button(description=tr("Check"))
        shown = widgets.HTML()

        def on_check(_: Any) -> None:
            shown.value = (check_answer(self.name, choices.value).html() if choices.value
                           else tr("Choose an answer first."))

        button.on_click(on_check)
        return widgets.VBox([widgets.HTML(f"<b>{self.name}.</b> {info['question']}"),
                             choices, button, shown])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle = {"text/plain": self.text()}
        try:
            view = self.widget()._repr_mimebundle_()
        except ImportError:
            return bundle
        view = view[0] if isinstance(view, tuple) else (view or {})
        return {**view, **bundle}

    def __repr__(self) -> str:
        return self.text()


def quiz(name: str, answer: str | None = None) -> Quiz | Verdict:
    """Question ``name``: shown to answer (``Quiz``), or graded when ``answer`` is given."""
    if answer is not None:
        return check_answer(name, answer)
    question(name)
    return Quiz(str(name))
