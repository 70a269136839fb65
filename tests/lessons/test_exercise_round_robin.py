"""Exercise 8.4: the learner's round-robin device function, run on hidden graphs and compared
with ``replica_device_setter``'s placement of the same graph.

The common wrong answers each get their own diagnosis: ``op.type == 'Variable'`` (no op has
that type), a counter kept outside the setter (each new setter goes on counting where the
last one stopped), the worker's name written in instead of ``worker_device``, and variables
that do not take turns. The ladder walks wrong, wrong, wrong, right, and no feedback before
the solution is asked for holds a line of it.
"""
from __future__ import annotations

import pytest
from exercise_ladder import assert_wrong_wrong_wrong_right

import tfteach as tf
from tfteach.lessons import check
from tfteach.notebook import exercise_checks, exercises

NAME = "8.4"


@pytest.fixture(autouse=True)
def fresh_tries():
    exercises.forget_tries()
    yield
    exercises.forget_tries()


def round_robin_setter(ps_tasks, worker_device):
    placed = {"variables": 0}

    def device_function(op):
        if op.type == "VariableV2":
            task = placed["variables"] % ps_tasks
            placed["variables"] += 1
            return f"/job:ps/task:{task}"
        return worker_device
    return device_function


def variable_type_trap(ps_tasks, worker_device):
    placed = {"variables": 0}

    def device_function(op):
        if op.type == "Variable":
            placed["variables"] += 1
            return f"/job:ps/task:{(placed['variables'] - 1) % ps_tasks}"
        return worker_device
    return device_function


def counter_outside():
    """A setter factory whose count lives outside it, as a module-level counter would."""
    count = [0]

    def make(ps_tasks, worker_device):
        def device_function(op):
            if op.type == "VariableV2":
                count[0] += 1
                return f"/job:ps/task:{(count[0] - 1) % ps_tasks}"
            return worker_device
        return device_function
    return make


def worker_written_in(ps_tasks, worker_device):
    inner = round_robin_setter(ps_tasks, worker_device)
    return lambda op: inner(op) if op.type == "VariableV2" else "/job:worker"


def all_on_task_0(ps_tasks, worker_device):
    return lambda op: "/job:ps/task:0" if op.type == "VariableV2" else worker_device


def problems(build) -> str:
    return " ".join(check(build, exercise=NAME).problems)


def test_the_check_is_registered_for_a_build_exercise():
    assert exercises.exercise(NAME)["kind"] == "build"
    assert NAME in exercise_checks.BUILD_CHECKS


def test_a_round_robin_setter_passes_on_every_hidden_graph():
    for _ in range(5):                   # new ps tasks, worker and variables each time
        assert check(round_robin_setter, exercise=NAME)


def test_op_type_variable_gets_its_own_diagnosis():
    text = problems(variable_type_trap)
    assert "looks for ops of type 'Variable', and no op has that type" in text
    assert "'VariableV2'" in text


def test_the_untouched_starter_is_told_no_variable_reached_a_ps_task():
    def starter(ps_tasks, worker_device):
        def device_function(op):
            return worker_device
        return device_function
    text = problems(starter)
    assert "returns a ps task's device for no op" in text and "'Variable'," not in text


def test_a_counter_kept_outside_the_setter_is_diagnosed_even_from_zero():
    for _ in range(5):                   # a fresh counter: the check's second graph shows it
        text = problems(counter_outside())
        assert "counter kept outside the function" in text, text
        assert "Keep the counter inside round_robin_setter" in text


def test_a_device_function_reused_across_graphs_is_the_same_mistake():
    shared = round_robin_setter(3, "/job:worker/task:0")
    text = problems(lambda ps_tasks, worker_device: shared)
    assert "not the worker_device" in text or "do not start at task 0" in text \
        or "in turn" in text


def test_other_ops_must_go_to_the_given_worker_device():
    text = problems(worker_written_in)
    assert "not the worker_device the setter was given" in text
    assert "VariableV2" not in text and "in turn" not in text


def test_variables_must_take_turns():
    assert "in turn" in problems(all_on_task_0)


def test_typed_answers_and_a_device_string_are_refused():
    answer = exercises.exercise(NAME)["answer"]
    for typed in (answer, "/job:ps/task:0"):
        feedback = check(typed, exercise=NAME)
        assert not feedback and "this check wants" in feedback.problems[0]
    assert exercises.wrong_tries(NAME) == 0, "a refusal is not a try"


def test_a_setter_that_raises_says_so():
    def broken(ps_tasks, worker_device):
        return lambda op: op.no_such_attribute
    assert "AttributeError" in problems(broken)


def test_the_replica_device_setter_itself_passes():
    """TF's own setter, made by a new call each time, is the reference: it passes."""
    assert check(lambda n, worker: tf.train.replica_device_setter(ps_tasks=n,
                                                                  worker_device=worker),
                 exercise=NAME)


def test_wrong_wrong_wrong_right_never_shows_the_solution_before_it_is_asked_for():
    assert_wrong_wrong_wrong_right(NAME, (variable_type_trap, counter_outside(),
                                          worker_written_in), round_robin_setter)
