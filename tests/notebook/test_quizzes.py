"""The lessons' "why" questions (``tf.lessons.quiz``): one right choice each, an explanation for
the chosen one, the learner's language, widgets without a front-end, and grading."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import tfteach as tf
from tfteach import errors
from tfteach.notebook import exercises, grading, quizzes

LANGUAGES = ["en", "ko", "zh", "ru"]


@pytest.fixture(autouse=True)
def _english_and_fresh(monkeypatch):
    monkeypatch.setenv("TFTEACH_LANG", "en")
    exercises.forget_tries()
    yield
    exercises.forget_tries()


def _right_letter(name: str) -> str:
    """The right choice, found by answering every one (the data does not say it)."""
    right = [k for k in quizzes.question(name)["choices"] if quizzes.check_answer(name, k)]
    assert len(right) == 1, (name, right)
    return right[0]


def test_every_question_has_exactly_one_right_choice_of_at_least_three():
    for name in quizzes.names():
        assert len(quizzes.question(name)["choices"]) >= 3, name
        _right_letter(name)


def test_a_right_answer_says_so_with_its_explanation():
    letter = _right_letter("8.Q1")
    verdict = tf.lessons.quiz("8.Q1", answer=letter)
    assert verdict and verdict.right
    assert quizzes.question("8.Q1")["choices"][letter]["why"] in verdict.text()
    assert verdict.text().startswith("Right")


def test_each_wrong_answer_gets_its_own_explanation():
    right = _right_letter("8.Q2")
    wrong = [k for k in quizzes.question("8.Q2")["choices"] if k != right]
    texts = [tf.lessons.quiz("8.Q2", answer=f"({k.upper()})").text() for k in wrong]
    for letter, text in zip(wrong, texts, strict=True):
        assert text.startswith("Not quite")
        assert quizzes.question("8.Q2")["choices"][letter]["why"] in text
    assert len(set(texts)) == len(wrong)


def test_an_unknown_question_or_choice_is_refused_with_a_hint():
    with pytest.raises(errors.NotFoundError, match="no question '99.Q1'") as found:
        tf.lessons.quiz("99.Q1")
    assert "8.Q1" in found.value.hint
    with pytest.raises(errors.InvalidArgumentError, match="no choice 'z'"):
        tf.lessons.quiz("8.Q1", answer="z")


def test_the_data_does_not_hold_the_answers():
    for lang in LANGUAGES:
        text = (quizzes.FOLDER / f"{lang}.json").read_text(encoding="utf-8")
        for entry in json.loads(text).values():
            assert set(entry) == {"question", "choices"}
            for choice in entry["choices"].values():
                assert set(choice) == {"text", "why"}
    keys = json.loads(quizzes.KEYS.read_text())
    assert all(len(v) == 24 and v not in "abcd" for v in keys.values())
    assert keys["8.Q1"] == quizzes.digest("8.Q1", _right_letter("8.Q1"))


def test_every_language_has_every_question_with_the_same_choices():
    english = json.loads((quizzes.FOLDER / "en.json").read_text(encoding="utf-8"))
    for lang in LANGUAGES[1:]:
        other = json.loads((quizzes.FOLDER / f"{lang}.json").read_text(encoding="utf-8"))
        assert list(other) == list(english) == quizzes.names(), lang
        for name, entry in english.items():
            assert list(other[name]["choices"]) == list(entry["choices"]), (lang, name)
            assert other[name]["question"] != entry["question"], (lang, name)


def test_the_learners_language_picks_the_data_file(monkeypatch):
    monkeypatch.setenv("TFTEACH_LANG", "ko")
    korean = json.loads((quizzes.FOLDER / "ko.json").read_text(encoding="utf-8"))["8.Q3"]
    shown = tf.lessons.quiz("8.Q3").text()
    assert korean["question"] in shown and korean["choices"]["b"]["text"] in shown
    verdict = tf.lessons.quiz("8.Q3", answer="b")
    assert korean["choices"]["b"]["why"] in verdict.text()


def test_the_widget_is_built_and_checks_without_a_front_end():
    widgets = pytest.importorskip("ipywidgets")
    box = tf.lessons.quiz("8.Q2").widget()
    title, choices, button, shown = box.children
    assert isinstance(choices, widgets.RadioButtons) and isinstance(button, widgets.Button)
    assert [value for _, value in choices.options] == list(quizzes.question("8.Q2")["choices"])
    right = _right_letter("8.Q2")
    exercises.forget_tries()
    wrong = next(k for k in "abcd" if k != right)
    choices.value = wrong
    button.click()
    assert quizzes.question("8.Q2")["choices"][wrong]["why"] in shown.value
    assert exercises.progress()["8.Q2"] == {"passed": False, "tries": 1}
    choices.value = right
    button.click()
    assert exercises.progress()["8.Q2"]["passed"] is True


def test_without_widgets_the_question_shows_as_text():
    bundle = tf.lessons.quiz("8.Q1")._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    info = quizzes.question("8.Q1")
    assert bundle["text/plain"].splitlines() == [f"8.Q1. {info['question']}"] + [
        f"  ({k}) {c['text']}" for k, c in info["choices"].items()]


def test_grading_counts_a_lessons_questions_beside_its_exercises():
    rows = grading._exercises_of(Path("08_parameter_servers.ipynb"), {})
    assert {"8.1", "8.Q1", "8.Q2", "8.Q3"} <= set(rows)
    assert not any(n.startswith("7.") for n in rows)


@pytest.mark.parametrize("name", quizzes.names())
def test_every_wrong_choice_then_the_right_one_never_gives_the_answer_away(name):
    """The quiz's ladder: each wrong choice (up to three) is explained on its own terms; none
    of those texts names the right letter or holds the right choice's explanation; then the
    right choice is right."""
    right = _right_letter(name)
    choices = quizzes.question(name)["choices"]
    wrongs = [k for k in choices if k != right][:3]
    for letter in wrongs:
        text = tf.lessons.quiz(name, answer=letter).text()
        assert text.startswith("Not quite") and f"({right})" not in text, (name, letter)
        assert choices[right]["why"] not in text
    assert tf.lessons.quiz(name, answer=right).right
