"""Exercise checks cannot be gamed, and the feedback ladder never gives the answer away.

A build exercise's check takes what the learner built and runs it on hidden, randomised
inputs: typed numbers are refused, and so are builds that only look right (overlapping
slices, labels left behind, a hand placement where a strategy is asked for, a sync optimizer
that never trains). A predict exercise's answer comes from a graph the package builds. The
ladder: a diagnosis, then the idea and its section, then a worked hint; the answer only on
request, and never in a copy of the lessons made without solutions.
"""
from __future__ import annotations

import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from exercise_ladder import fresh_tries, solution_lines  # noqa: F401

import tfteach as tf
from tfteach import cli, errors
from tfteach.lessons import check, check_placement, solution
from tfteach.notebook import exercise_checks, exercises

BUILDS = sorted(n for n in exercises.names() if exercises.exercise(n).get("kind") == "build")
PLACEMENTS = [n for n in BUILDS if n not in exercise_checks.BUILD_CHECKS
              and n not in exercise_checks.DERIVED]


def refused(feedback) -> bool:
    return not feedback.passed and any("this check wants" in p for p in feedback.problems)


# ---- typed answers ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", BUILDS)
def test_no_build_exercise_accepts_its_literal_correct_answer(name):
    answer = exercises.exercise(name)["answer"]
    assert refused(check(answer, exercise=name)), name
    if name in PLACEMENTS:
        assert refused(check_placement(answer, exercise=name)), name


def test_the_refusal_says_what_the_check_wants():
    feedback = check([[400, 120], [200, 200, 100]], exercise="5.4")
    assert "feed_in_proportion" in feedback.problems[0]
    assert exercises.wrong_tries("5.4") == 0, "a refusal is not a try"


@pytest.mark.parametrize("name, typed", [("11.1", 2.0), ("11.2", 42.0), ("8.3", {"ps:0": 8192}),
                                         ("8.2", {"ps:0": 8192, "ps:1": 168, "ps:2": 1280})])
def test_typed_numbers_are_refused(name, typed):
    assert refused(check(typed, exercise=name))


# ---- 5.4: hidden batches ------------------------------------------------------------------------

def feed_in_proportion(xs, ys, x_batch, y_batch, speeds):
    """Where each share ends, rounded (rounding each share's size instead adds the errors up:
    with four towers the last share can be 1.5 rows off, and the check refuses it)."""
    cuts = np.round(np.cumsum(speeds)[:-1] / sum(speeds) * len(x_batch)).astype(int)
    return {**dict(zip(xs, np.split(x_batch, cuts), strict=True)), **dict(zip(ys, np.split(y_batch, cuts), strict=True))}


def overlapping(xs, ys, x_batch, y_batch, speeds):
    out = feed_in_proportion(xs, ys, x_batch, y_batch, speeds)
    out[xs[1]] = np.concatenate([out[xs[1]], out[xs[0]][:1]])
    out[ys[1]] = np.concatenate([out[ys[1]], out[ys[0]][:1]])
    return out


def labels_dropped(xs, ys, x_batch, y_batch, speeds):
    out = feed_in_proportion(xs, ys, x_batch, y_batch, speeds)
    out[ys[0]] = out[ys[0]][1:]
    return out


def labels_shuffled(xs, ys, x_batch, y_batch, speeds):
    out = feed_in_proportion(xs, ys, x_batch, y_batch, speeds)
    out[ys[0]] = out[ys[0]][::-1]
    return out


def remainder_dropped(xs, ys, x_batch, y_batch, speeds):
    total, n = sum(speeds), len(x_batch)
    sizes = [int(n * s / total) for s in speeds]
    cuts = np.cumsum(sizes)
    return {**dict(zip(xs, np.split(x_batch[:cuts[-1]], cuts[:-1]), strict=True)),
            **dict(zip(ys, np.split(y_batch[:cuts[-1]], cuts[:-1]), strict=True))}


def equal_slices(xs, ys, x_batch, y_batch, speeds):
    return {**dict(zip(xs, np.array_split(x_batch, len(xs)), strict=True)),
            **dict(zip(ys, np.array_split(y_batch, len(ys)), strict=True))}


def test_5_4_accepts_a_split_in_proportion():
    assert check(feed_in_proportion, exercise="5.4")


@pytest.mark.parametrize("build, kind", [(overlapping, "overlap"), (labels_dropped, "labels"),
                                         (labels_shuffled, "labels"),
                                         (remainder_dropped, "do not cover"),
                                         (equal_slices, "share")])
def test_5_4_refuses_splits_that_only_look_right(build, kind):
    for _ in range(3):                  # new hidden inputs every time: never right by chance
        feedback = check(build, exercise="5.4")
        assert not feedback and kind in " ".join(feedback.problems), feedback.problems


# ---- predict: the package's graph ---------------------------------------------------------------

def test_2_2_compares_with_the_packages_graph_not_the_learners():
    tf.reset_default_graph()
    assert not check({}, {}, exercise="2.2")
    spelled_otherwise = {"p": "/job:worker/task:2", "q": "",
                         "r": "/job:worker/device:cpu:0"}
    assert check(spelled_otherwise, exercise="2.2"), "devices compare as DeviceSpecs"


# ---- 2.1, 8.2 and 8.3: functions and graphs -----------------------------------------------------

def my_device_fn(op):
    if op.type == "VariableV2":
        return "/cpu:0"
    return "/device:GPU:1" if op.type == "MatMul" else "gpu:0"


def test_2_1_needs_a_device_function_and_runs_it_on_ops_of_its_own():
    assert check(my_device_fn, exercise="2.1")
    assert not check(lambda op: "/gpu:0", exercise="2.1")
    by_name = {"w": "/cpu:0", "b": "/cpu:0", "product": "/gpu:1", "out": "/gpu:0"}
    assert not check(lambda op: by_name.get(op.name, "/gpu:0"), exercise="2.1")
    placed_by_hand = SimpleNamespace(devices={k: f"/job:localhost/replica:0/task:0/device:"
                                              f"{v[1:].upper()}" for k, v in by_name.items()})
    assert refused(check(placed_by_hand, exercise="2.1"))


THREE_PS = tf.train.ClusterSpec({"ps": ["localhost:1", "localhost:2", "localhost:3"]})


def greedy_setter():
    greedy = tf.train.GreedyLoadBalancingStrategy(3, tf.train.byte_size_load_fn)
    return tf.train.replica_device_setter(cluster=THREE_PS, ps_strategy=greedy)


def test_8_2_wants_a_strategy_that_balances_bytes_on_models_it_picks():
    assert check(greedy_setter, exercise="8.2")
    assert not check(lambda: tf.train.replica_device_setter(cluster=THREE_PS), exercise="8.2")
    lesson_by_hand = {"w1": 0, "b1": 1, "w2": 1, "b2": 1}
    by_hand = (lambda: lambda op: f"/job:ps/task:{lesson_by_hand.get(op.name, 2)}"
               if op.type == "VariableV2" else "")
    assert not check(by_hand, exercise="8.2")


def model_8(devices: dict[str, str]) -> tf.Graph:
    shapes = exercise_checks.MODEL_8
    with tf.Graph().as_default() as graph:
        for name, shape in shapes.items():
            with tf.device(devices[name]):
                tf.Variable(np.zeros(shape, np.float32), name=name)
    return graph


def test_8_3_reads_the_placement_from_the_learners_graph():
    good = {"w1": "/job:ps/task:0", "b1": "/job:ps/task:1", "w2": "/job:ps/task:1",
            "b2": "/job:ps/task:1"}
    assert check(model_8(good), exercise="8.3")
    assert not check(model_8({**good, "b1": "/job:ps/task:0"}), exercise="8.3")
    assert not check(model_8({**good, "b2": "/job:worker/task:0"}), exercise="8.3")


# ---- the ladder ---------------------------------------------------------------------------------

def _wrong(value, k: int):
    """A wrong answer of the same shape as ``value``, the ``k``-th of its kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 11 * k + 1
    if isinstance(value, str):
        return f"{value}-{k}"
    if isinstance(value, list):
        return [_wrong(v, k) for v in value]
    return {key: _wrong(v, k) for key, v in value.items()}


def _given_answers() -> dict[str, object]:
    """Each answer exercise (and the placements) with the right answer it is walked to."""
    found = {}
    for name in exercises.names():
        info = exercises.exercise(name)
        if name in PLACEMENTS:
            value = info.get("value")
            found[name] = SimpleNamespace(devices=info["answer"],
                                          values={"x": value} if value is not None else {})
        elif info.get("kind") != "build" and "answer" in info:
            found[name] = info["answer"]
    return found


def _placement_tries(name: str, right: SimpleNamespace) -> list[SimpleNamespace]:
    """Three different wrong placements: every op somewhere it is not asked for."""
    devices = ("/cpu:0", "/gpu:0", "/gpu:1", "/job:ps/task:1")
    elsewhere = {op: [d for d in devices if d != wanted] for op, wanted in right.devices.items()}
    return [SimpleNamespace(devices={op: others[k] for op, others in elsewhere.items()},
                            values=right.values) for k in range(3)]


@pytest.mark.parametrize("name", sorted(_given_answers()))
def test_wrong_wrong_wrong_right_never_shows_the_answer_before_it_is_asked_for(name):
    right = _given_answers()[name]
    info = exercises.exercise(name)
    lines = solution_lines(name)
    tries = (_placement_tries(name, right) if name in PLACEMENTS
             else [_wrong(right, k) for k in range(3)])
    texts = [check(wrong, exercise=name).text() for wrong in tries]
    assert info["direction"] in texts[0] and info["concept"] in texts[1]
    assert info["section"] in texts[1] and info["hint"] in texts[2]
    shown_answer = repr(right) if not isinstance(right, SimpleNamespace) else None
    for text in texts:
        assert "expected" not in text and "The answer" not in text
        if shown_answer and len(shown_answer) > 3:
            assert shown_answer not in text
        assert not [line for line in lines if line in text], name
    second_hints = texts[1].split("Hint:", 1)[1].replace(info["section"], "")
    assert "`" not in second_hints, "the second try shows no code (but the section's title)"
    assert check(right, exercise=name), "right after three wrong tries"


def test_categorical_answers_are_never_too_low_or_too_high():
    assert check(1, exercise="8.1").problems == ["the answer, 1, is not right yet"]
    problems = check(("worker", 0, "w0:2222,w1:2222"), exercise="12.1").problems
    assert problems == ["value 2, 0, is not right yet"]
    assert check(40, exercise="5.2").problems == ["the answer, 40, is too low"]


def test_an_unchanged_submission_and_the_starter_are_not_tries():
    for _ in range(3):
        check(1, exercise="8.1")                 # the lesson's starter, run again and again
    assert exercises.wrong_tries("8.1") == 0
    for _ in range(3):
        check(0, exercise="8.1")                 # one wrong answer, checked three times
    assert exercises.wrong_tries("8.1") == 1
    text = check(0, exercise="8.1").text()
    assert exercises.exercise("8.1")["direction"] in text


# ---- teacher mode -------------------------------------------------------------------------------

def test_a_copy_without_solutions_turns_the_solution_and_its_pointer_off(tmp_path, monkeypatch):
    assert cli.main(["lessons", "copy", str(tmp_path / "class"), "--no-solutions"]) == 0
    copied = json.loads((tmp_path / "class" / "05_data_parallelism.ipynb").read_text())
    assert not [c for c in copied["cells"] if exercises.is_solution(c)]
    monkeypatch.chdir(tmp_path / "class")
    with pytest.raises(errors.PermissionDeniedError):
        solution("5.2")
    texts = [check(wrong, exercise="5.2").text() for wrong in (1, 2, 3, 4)]
    assert not [t for t in texts[1:] if re.search(r"solution\('5\.2'\)", t)]
    monkeypatch.chdir(tmp_path)
    assert "rows_for_slow_gpu" in solution("5.2").text()


def test_a_copy_with_solutions_keeps_them(tmp_path, monkeypatch):
    assert cli.main(["lessons", "copy", str(tmp_path / "own")]) == 0
    monkeypatch.chdir(tmp_path / "own")
    assert solution("5.2").cells


# ---- 5.3, 9.2, 9.3, 10.4, 12.3, 12.4: functions run in graphs of the check's own ----------------

def cifar_average_gradients(tower_grads):
    averaged = []
    for grads_and_var in zip(*tower_grads, strict=True):
        grads = [tf.expand_dims(g, 0) for g, _ in grads_and_var]
        averaged.append((tf.reduce_mean(tf.concat(axis=0, values=grads), 0), grads_and_var[0][1]))
    return averaged


def test_5_3_averages_towers_the_check_makes_up():
    assert check(cifar_average_gradients, exercise="5.3")
    assert not check(lambda towers: towers[0], exercise="5.3")
    summed = (lambda towers: [(tf.add_n([g for g, _ in gv]), gv[0][1]) for gv in zip(*towers, strict=True)])
    assert not check(summed, exercise="5.3")


TWO_WORKERS = tf.train.ClusterSpec({"ps": ["localhost:1"], "worker": ["localhost:2", "localhost:3"]})


def test_9_2_places_ops_of_its_own_with_the_setter():
    right = tf.train.replica_device_setter(cluster=TWO_WORKERS, worker_device="/job:worker/task:1")
    assert check(right, exercise="9.2")
    assert not check(tf.train.replica_device_setter(cluster=TWO_WORKERS), exercise="9.2")


def test_9_3_counts_the_updates_of_a_model_of_its_own():
    def counted(loss):
        step = tf.train.get_or_create_global_step()
        return tf.train.GradientDescentOptimizer(0.5).minimize(loss, global_step=step)

    def uncounted(loss):
        tf.train.get_or_create_global_step()
        return tf.train.GradientDescentOptimizer(0.5).minimize(loss)

    assert check(counted, exercise="9.3")
    assert not check(uncounted, exercise="9.3")


def test_12_3_and_12_4_run_the_learners_functions_on_hidden_inputs():
    def after(train_op, global_step):
        with tf.control_dependencies([train_op]):
            return global_step.read_value()

    assert check(after, exercise="12.3")
    assert not check(lambda train_op, global_step: global_step.read_value(), exercise="12.3")
    accuracy = (lambda logits, labels: tf.reduce_mean(
        tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32)))
    assert check(accuracy, exercise="12.4")
    assert not check(lambda logits, labels: tf.constant(0.75), exercise="12.4")


def test_12_4_runs_two_cases_so_a_constant_that_fits_one_fails():
    """A constant is right only where it happens to equal the hidden accuracy: the check's
    second case, with another accuracy, refuses the first case's value."""
    remembered = []

    def accuracy_once(logits, labels):
        op = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))
        if remembered:
            return tf.constant(remembered[0])
        with tf.Session() as sess:
            remembered.append(float(sess.run(op)))
        return op

    assert not check(accuracy_once, exercise="12.4")
    assert len(remembered) == 1


def backup_worker(task_index, num_workers=3, replicas=2):
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(tf.zeros([3]), name="w")
        step = tf.train.get_or_create_global_step()
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                             replicas_to_aggregate=replicas,
                                             total_num_replicas=num_workers)
        train_op = opt.minimize(tf.reduce_sum(tf.square(w)), global_step=step)
    return graph, train_op, opt, opt.make_session_run_hook(is_chief=task_index == 0)


def test_10_4_reads_the_three_workers_graphs():
    assert check(backup_worker, exercise="10.4")
    assert not check(lambda i: backup_worker(i, replicas=3), exercise="10.4")


def test_predict_answers_come_from_the_package_even_when_the_lesson_passes_one():
    tf.reset_default_graph()
    assert not check({}, {}, exercise="4.1"), "an empty graph predicts nothing"
    assert check({"a": 0, "b": 0, "c": 2, "d": 2, "e": 3}, exercise="4.1")
    assert not check(0, 0, exercise="4.2") and check(5, exercise="4.2")


def test_a_graph_built_again_unchanged_is_not_a_new_try():
    wrong = {"w1": "/job:ps/task:0", "b1": "/job:ps/task:0", "w2": "/job:ps/task:1",
             "b2": "/job:ps/task:1"}
    for _ in range(3):
        assert not check(model_8(wrong), exercise="8.3")
    assert exercises.wrong_tries("8.3") == 1
