"""The feedback ladders of the build exercises of lessons 2, 5, 8 and 9 (2.1, 5.3, 5.4, 8.2,
8.3, 9.2, 9.3), walked as a learner would: three different common mistakes, each diagnosed,
then the right build; no feedback before the solution is asked for holds a line of it. The
checks are called directly (no notebook runs), on inputs of their own each time."""
from __future__ import annotations

import re

import pytest
from exercise_ladder import (assert_wrong_wrong_wrong_right, fresh_tries,  # noqa: F401
                             solution_lines)
from test_exercise_gaming import (THREE_PS, TWO_WORKERS, cifar_average_gradients, equal_slices,
                                  feed_in_proportion, greedy_setter, labels_shuffled, model_8,
                                  my_device_fn, remainder_dropped)

import tfteach as tf
from tfteach.lessons import check
from tfteach.notebook import exercises


def problems(build, name: str) -> str:
    return " ".join(check(build, exercise=name).problems)


# ---- 2.1: a device function ------------------------------------------------------------------

def by_the_lessons_names(op):
    """Right for the lesson's graph only: the check's ops have names of their own."""
    return {"w": "/cpu:0", "b": "/cpu:0", "product": "/gpu:1"}.get(op.name, "/gpu:0")


def variable_type_trap(op):
    """No op has the type 'Variable' (TF 1.x variables are 'VariableV2')."""
    if op.type == "Variable":
        return "/cpu:0"
    return "/gpu:1" if op.type == "MatMul" else "/gpu:0"


def gpus_swapped(op):
    if op.type == "VariableV2":
        return "/cpu:0"
    return "/gpu:0" if op.type == "MatMul" else "/gpu:1"


def test_2_1_names_the_op_types_that_go_astray():
    assert "ops of type VariableV2 get '/gpu:0'" in problems(by_the_lessons_names, "2.1")
    assert problems(variable_type_trap, "2.1") == (
        "your function looks for ops of type 'Variable', and no op has that type; TF 1.x's "
        "variables are ops of type 'VariableV2'")
    text = problems(gpus_swapped, "2.1")
    assert "ops of type MatMul get '/gpu:0'" in text and "VariableV2" not in text


# ---- 5.3: the towers' gradients averaged -----------------------------------------------------

def first_towers_gradients(tower_grads):
    return tower_grads[0]


def summed_gradients(tower_grads):
    return [(tf.add_n([g for g, _ in grads_and_var]), grads_and_var[0][1])
            for grads_and_var in zip(*tower_grads, strict=True)]


def mean_over_the_wrong_axis(tower_grads):
    """Stacked along a new axis 0, then averaged over axis 1: within each tower's gradient."""
    averaged = []
    for grads_and_var in zip(*tower_grads, strict=True):
        grads = [tf.expand_dims(g, 0) for g, _ in grads_and_var]
        averaged.append((tf.reduce_mean(tf.concat(axis=0, values=grads), 1),
                         grads_and_var[0][1]))
    return averaged


def mean_of_everything(tower_grads):
    """reduce_mean without an axis: one number per variable."""
    return [(tf.reduce_mean(tf.stack([g for g, _ in grads_and_var])), grads_and_var[0][1])
            for grads_and_var in zip(*tower_grads, strict=True)]


# ---- 8.2: a strategy that balances bytes -----------------------------------------------------

def round_robin_setter():
    return tf.train.replica_device_setter(cluster=THREE_PS)


def greedy_over_two_tasks():
    greedy = tf.train.GreedyLoadBalancingStrategy(2, tf.train.byte_size_load_fn)
    return tf.train.replica_device_setter(cluster=THREE_PS, ps_strategy=greedy)


def greedy_by_count():
    """Greedy, but every variable weighs the same: it balances how many, not bytes."""
    greedy = tf.train.GreedyLoadBalancingStrategy(3, lambda op: 1)
    return tf.train.replica_device_setter(cluster=THREE_PS, ps_strategy=greedy)


# ---- 8.3: variables placed by hand -----------------------------------------------------------

def on_tasks(w1: int, b1: int, w2: int, b2: int) -> tf.Graph:
    return model_8({name: f"/job:ps/task:{task}"
                    for name, task in zip(("w1", "b1", "w2", "b2"), (w1, b1, w2, b2),
                                          strict=True)})


# ---- 9.2: the setter of worker 1 -------------------------------------------------------------

def worker_setter(**worker) -> object:
    """The learner's setter cell, with the arguments of this try."""
    return tf.train.replica_device_setter(cluster=TWO_WORKERS, **worker)


def everything_on_worker_1(op):
    """The variables too: they belong on the ps job."""
    return "/job:worker/task:1"


# ---- 9.3: the global step counts every update ------------------------------------------------

def uncounted(loss):
    tf.train.get_or_create_global_step()
    return tf.train.GradientDescentOptimizer(0.5).minimize(loss)


def counted_twice(loss):
    step = tf.train.get_or_create_global_step()
    update = tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)
    return tf.group(update, tf.assign_add(step, 1))


def a_counter_of_its_own(loss):
    step = tf.Variable(0, trainable=False)
    return tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)


def counted(loss):
    step = tf.train.get_or_create_global_step()
    return tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)


def only_counting(loss):
    """The step counted, the model never trained."""
    return tf.assign_add(tf.train.get_or_create_global_step(), 1)


def test_9_3_refuses_a_training_op_that_only_counts():
    assert problems(only_counting, "9.3") == ("your training op does not update the model: "
                                              "the global step counts the updates, it does "
                                              "not replace them")


def test_9_2_a_setter_made_again_unchanged_is_not_a_new_try():
    """The cell run again as it was: the setter's settings are the same (its round robin's
    turn, which the check moved, is no setting)."""
    for _ in range(3):
        assert not check(worker_setter(), exercise="9.2")
    assert exercises.wrong_tries("9.2") == 1


# ---- the ladders ------------------------------------------------------------------------------

LADDERS = [
    ("2.1", (by_the_lessons_names, variable_type_trap, gpus_swapped), my_device_fn),
    ("5.3", (first_towers_gradients, summed_gradients, mean_over_the_wrong_axis),
     cifar_average_gradients),
    ("5.4", (equal_slices, remainder_dropped, labels_shuffled), feed_in_proportion),
    ("8.2", (round_robin_setter, greedy_over_two_tasks, greedy_by_count), greedy_setter),
    # round robin's turns, everything on ps:0, the two tasks swapped
    ("8.3", (on_tasks(0, 1, 0, 1), on_tasks(0, 0, 0, 0), on_tasks(1, 0, 0, 0)),
     on_tasks(0, 1, 1, 1)),
    # the learner changes the setter's arguments and checks again: the default worker
    # device, worker 0 for "the first worker", then a function of their own
    ("9.2", (worker_setter(), worker_setter(worker_device="/job:worker/task:0"),
             everything_on_worker_1), worker_setter(worker_device="/job:worker/task:1")),
    ("9.3", (uncounted, counted_twice, a_counter_of_its_own), counted),
]

DIAGNOSES = [
    ("5.3", first_towers_gradients, "is not the mean of the towers' gradients"),
    ("5.3", summed_gradients, "added up, not their average"),
    ("5.3", mean_over_the_wrong_axis, "the mean is taken over the wrong axis"),
    ("5.3", mean_of_everything, "the mean is taken over the wrong axis"),
    ("5.4", equal_slices, "share"),
    ("5.4", remainder_dropped, "do not cover"),
    ("5.4", labels_shuffled, "labels"),
    ("8.2", round_robin_setter, "the strategy does not balance bytes"),
    ("8.2", greedy_over_two_tasks, "the strategy does not balance bytes"),
    ("8.2", greedy_by_count, "the strategy does not balance bytes"),
    ("8.3", on_tasks(0, 1, 0, 1), "w2 is on /job:ps/task:0"),
    ("8.3", on_tasks(0, 0, 0, 0), "b1 is on /job:ps/task:0"),
    ("8.3", on_tasks(1, 0, 0, 0), "w1 is on /job:ps/task:1"),
    ("9.2", worker_setter(), "the other ops go to '/job:worker'"),
    ("9.2", worker_setter(worker_device="/job:worker/task:0"), "'/job:worker/task:0'"),
    ("9.2", everything_on_worker_1, "variables do not go to the ps job"),
    ("9.3", uncounted, "does not count the updates"),
    ("9.3", counted_twice, "does not count the updates"),
    ("9.3", a_counter_of_its_own, "has no global step"),
]


@pytest.mark.parametrize("name, build, diagnosis", DIAGNOSES,
                         ids=[f"{name}-{i}" for i, (name, _, _) in enumerate(DIAGNOSES)])
def test_each_wrong_try_gets_its_diagnosis(name, build, diagnosis):
    assert diagnosis in problems(build, name)


@pytest.mark.parametrize("name, wrongs, right", LADDERS, ids=[row[0] for row in LADDERS])
def test_wrong_wrong_wrong_right(name, wrongs, right):
    assert_wrong_wrong_wrong_right(name, wrongs, right)


ASSIGNED = re.compile(r"^[A-Za-z_][\w.]*\s*=(?!=)\s*")      # `name = ` or `keyword=`


@pytest.mark.parametrize("name", exercises.names())
def test_the_worked_hint_copies_no_expression_of_the_solution(name):
    """Nor what a solution line assigns or passes: the third try's hint says what to do, and
    only the solution shows the code that does it."""
    hint = exercises.exercise(name)["hint"]
    parts = {ASSIGNED.sub("", line).rstrip(":)") for line in solution_lines(name)}
    assert not [part for part in parts if len(part) >= 16 and part in hint]
