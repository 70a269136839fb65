"""A lesson's exercise checks (``exercise="5.2"``): answers kept in the package, feedback that
grows with each wrong try (a direction, then the idea and its section, then a worked hint),
and the answer only on request (``solution``)."""
from __future__ import annotations

import pytest

import tfteach as tf
from tfteach import errors
from tfteach.lessons import check, check_placement, solution
from tfteach.notebook import exercises
from tfteach.notebook.placement_cell import PlacementOptions, run_placement_cell


@pytest.fixture(autouse=True)
def fresh_tries():
    exercises.forget_tries()
    yield
    exercises.forget_tries()


def test_the_answer_comes_from_the_package_when_the_call_gives_none():
    assert check(120, exercise="5.2")
    assert check(120, exercise="5.2").text() == (
        "Correct: the slow GPU's share of the batch. Well done!")


def test_first_wrong_try_gives_a_direction_but_not_the_answer():
    text = check(40, exercise="5.2").text()
    assert "the answer, 40, is too low" in text
    assert exercises.exercise("5.2")["direction"] in text
    assert "120" not in text and exercises.exercise("5.2")["hint"] not in text


def test_second_wrong_try_names_the_idea_and_its_section_not_code():
    check(40, exercise="5.2")
    text = check(400, exercise="5.2").text()
    assert "the answer, 400, is too high" in text
    info = exercises.exercise("5.2")
    assert info["concept"] in text and info["section"] in text
    assert info["hint"] not in text and "expected 120" not in text


def test_third_wrong_try_gives_a_worked_hint_and_never_the_answer():
    for wrong in (40, 400):
        check(wrong, exercise="5.2")
    for wrong in (41, 42):
        text = check(wrong, exercise="5.2").text()
        assert exercises.exercise("5.2")["hint"] in text
        assert "expected 120" not in text and "120" not in text
        assert "tfteach.lessons.solution('5.2')" in text


def test_tries_are_counted_per_exercise():
    check(40, exercise="5.2")
    check(40, exercise="5.2")
    assert "is too low" in check(1, exercise="3.1").text()


def test_a_right_answer_after_wrong_ones_is_correct():
    check(40, exercise="5.2")
    assert check(120, exercise="5.2")


def test_directions_name_the_wrong_parts_of_a_tuple_and_a_dict():
    assert check((40, 80), exercise="10.1").problems == ["value 1, 40, is too low"]
    problems = check({"a": 0, "b": 5, "c": 2, "d": 2, "x": 1}, exercise="4.1").problems
    assert problems == ["there is no answer for 'e'", "'b', 5, is too high", "'x' is not asked for"]


def test_an_expected_value_the_lesson_gives_is_ignored_where_the_package_builds_the_answer():
    first = check({"a": 0, "c": 1}, {"a": 0, "c": 1}, exercise="4.1")
    assert not first and first.what == "the pending counts"


def test_json_lists_match_tuples():
    assert check(("async", "sync"), exercise="10.2")


def test_without_an_exercise_a_check_says_what_was_expected_at_once():
    assert check(2, 3).problems == ["expected 3, got 2"]
    with pytest.raises(TypeError, match="exercise="):
        check(2)


def test_an_unknown_exercise_is_a_not_found_error_with_a_hint():
    with pytest.raises(errors.NotFoundError) as caught:
        check(1, exercise="99.9")
    assert "'lesson.number'" in caught.value.hint


PLACED = """
x = tf.constant([[1.0]], name='x')
w0 = tf.constant([[2.0]], name='w0')
w1 = tf.constant([[3.0]], name='w1')
product_0 = tf.matmul(x, w0, name='product_0')
product_1 = tf.matmul(x, w1, name='product_1')
total = tf.add(product_0, product_1, name='total')
total
"""


def test_placement_feedback_for_a_rerun_cell_stays_the_first_try_and_hides_the_devices():
    result = run_placement_cell(PLACED, PlacementOptions(run=True), {"tf": tf})
    texts = []
    for _ in range(3):
        feedback = check_placement(result, exercise="1.1")
        assert "'product_0' is on GPU:0, not where the exercise asks" in feedback.problems
        texts.append(feedback.text())
    assert exercises.wrong_tries("1.1") == 1, "the same cell's result, checked again, is one try"
    assert not [t for t in texts if "/gpu:1" in t or "tf.device('/gpu:1')" in t]
    result.close()


def test_solution_shows_the_lessons_solution_cells_and_the_answer():
    shown = solution("5.2")
    assert shown.cells and all(kind in ("markdown", "code") for kind, _ in shown.cells)
    assert "rows_for_slow_gpu" in shown.text() and "The answer: `120`" in shown.text()
    assert shown._repr_markdown_() == shown.text()
