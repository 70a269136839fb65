"""Exercise 5.5: the learner's tower loop, run with a model, an optimizer and batches the
check picks (two GPU counts out of 2 to 4), and judged by what one traced step did.

The common wrong answers each get their own diagnosis: variables made again by each tower
(reuse missing), towers with variables of their own, every tower on one device, slices that
overlap or leave rows out, gradients summed instead of averaged, an update per tower, the
average computed on a GPU, and the untouched starter (one model on the whole batch). The
ladder walks wrong, wrong, wrong, right, and no feedback before the solution is asked for
holds a line of it.
"""
from __future__ import annotations

import pytest
from exercise_ladder import assert_wrong_wrong_wrong_right

import tfteach as tf
from tfteach.lessons import check, solution
from tfteach.notebook import exercise_checks, exercises

NAME = "5.5"


@pytest.fixture(autouse=True)
def fresh_tries():
    exercises.forget_tries()
    yield
    exercises.forget_tries()


def average_gradients(tower_grads):
    """The lesson's average: per variable, the towers' gradients added and divided."""
    averaged = []
    for grads_and_var in zip(*tower_grads, strict=True):
        grads = [g for g, _ in grads_and_var]
        averaged.append((tf.add_n(grads) / len(grads), grads_and_var[0][1]))
    return averaged


def towers(model_fn, opt, x_batch, y_batch, num_gpus, device="/gpu:%d", scope="model",
           reuse=True, slices=None):
    """Each tower's gradients, built the lesson's way unless a keyword says otherwise."""
    xs, ys = slices or (tf.split(x_batch, num_gpus), tf.split(y_batch, num_gpus))
    tower_grads = []
    for i in range(num_gpus):
        with tf.device(device.replace("%d", str(i))), tf.name_scope(f"tower_{i}"):
            with tf.variable_scope(scope.replace("%d", str(i)), reuse=reuse and i > 0):
                loss = model_fn(xs[i], ys[i])
            tower_grads.append(opt.compute_gradients(loss))
    return tower_grads


def tower_train_op(model_fn, opt, x_batch, y_batch, num_gpus):
    tower_grads = towers(model_fn, opt, x_batch, y_batch, num_gpus)
    with tf.device("/cpu:0"):
        return opt.apply_gradients(average_gradients(tower_grads))


def starter(model_fn, opt, x_batch, y_batch, num_gpus):
    return opt.minimize(model_fn(x_batch, y_batch))


def reuse_missing(model_fn, opt, x_batch, y_batch, num_gpus):
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus, reuse=False)
    with tf.device("/cpu:0"):
        return opt.apply_gradients(average_gradients(grads))


def own_variables(model_fn, opt, x_batch, y_batch, num_gpus):
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus, scope="tower_%d", reuse=False)
    with tf.device("/cpu:0"):
        return opt.apply_gradients(average_gradients(grads))


def reused_scope_per_tower(model_fn, opt, x_batch, y_batch, num_gpus):
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus, scope="tower_%d")
    with tf.device("/cpu:0"):
        return opt.apply_gradients(average_gradients(grads))


def one_device(model_fn, opt, x_batch, y_batch, num_gpus):
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus, device="/gpu:0")
    with tf.device("/cpu:0"):
        return opt.apply_gradients(average_gradients(grads))


def whole_batch_each(model_fn, opt, x_batch, y_batch, num_gpus):
    slices = ([x_batch] * num_gpus, [y_batch] * num_gpus)
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus, slices=slices)
    with tf.device("/cpu:0"):
        return opt.apply_gradients(average_gradients(grads))


def rows_left_out(model_fn, opt, x_batch, y_batch, num_gpus):
    n = int(x_batch.shape[0]) // (num_gpus + 1)
    slices = ([x_batch[i * n:(i + 1) * n] for i in range(num_gpus)],
              [y_batch[i * n:(i + 1) * n] for i in range(num_gpus)])
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus, slices=slices)
    with tf.device("/cpu:0"):
        return opt.apply_gradients(average_gradients(grads))


def summed(model_fn, opt, x_batch, y_batch, num_gpus):
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus)
    with tf.device("/cpu:0"):
        return opt.apply_gradients([(tf.add_n([g for g, _ in pairs]), pairs[0][1])
                                    for pairs in zip(*grads, strict=True)])


def applied_per_tower(model_fn, opt, x_batch, y_batch, num_gpus):
    grads = towers(model_fn, opt, x_batch, y_batch, num_gpus)
    return tf.group(*[opt.apply_gradients(tower) for tower in grads])


def averaged_on_a_gpu(model_fn, opt, x_batch, y_batch, num_gpus):
    return opt.apply_gradients(average_gradients(towers(model_fn, opt, x_batch, y_batch,
                                                        num_gpus)))


def two_towers_always(model_fn, opt, x_batch, y_batch, num_gpus):
    return tower_train_op(model_fn, opt, x_batch, y_batch, 2)


def problems(build) -> str:
    return " ".join(check(build, exercise=NAME).problems)


def test_the_check_is_registered_for_a_build_exercise():
    assert exercises.exercise(NAME)["kind"] == "build"
    assert NAME in exercise_checks.BUILD_CHECKS


def test_the_lessons_tower_loop_passes_on_every_hidden_case():
    for _ in range(4):                   # new GPU counts, batches, models and rates each time
        assert check(tower_train_op, exercise=NAME)


def test_the_starter_is_told_to_build_one_tower_per_gpu():
    assert problems(starter) == ("the model function was not called once per GPU: each tower "
                                 "builds the model once, on its own slice of the batch")


def test_a_loop_for_two_gpus_fails_where_the_check_has_more():
    assert "not called once per GPU" in problems(two_towers_always)


def test_reuse_missing_is_diagnosed():
    text = problems(reuse_missing)
    assert "its variables already exist" in text and "reuse" in text


def test_towers_with_variables_of_their_own_are_diagnosed():
    assert "each tower made its own variables" in problems(own_variables)


def test_reuse_of_a_scope_per_tower_is_diagnosed():
    assert "every tower must open the same variable scope" in problems(reused_scope_per_tower)


def test_all_towers_on_one_device_is_diagnosed():
    text = problems(one_device)
    assert "all the towers ran on the same device" in text and "slices" not in text


def test_overlapping_and_missing_slices_are_diagnosed():
    assert problems(whole_batch_each) == "the slices overlap: some rows go to two towers"
    assert problems(rows_left_out) == ("the slices do not cover the batch: rows are left out "
                                       "(the remainder?)")


def test_summed_gradients_are_told_from_averaged_ones_by_the_update():
    assert problems(summed) == ("the update is the towers' gradients added up, not their "
                                "average: divide the sum by the number of towers")


def test_an_update_per_tower_is_diagnosed():
    assert "updated more than once in a step" in problems(applied_per_tower)


def test_an_average_outside_the_cpu_is_diagnosed():
    text = problems(averaged_on_a_gpu)
    assert "computed on /device:GPU:0, not on the CPU" in text


def test_typed_answers_are_refused():
    answer = exercises.exercise(NAME)["answer"]
    for typed in (answer, 6, [0.5, -1.25]):
        feedback = check(typed, exercise=NAME)
        assert not feedback and "this check wants" in feedback.problems[0]
        assert "tower_train_op" in feedback.problems[0]
    assert exercises.wrong_tries(NAME) == 0, "a refusal is not a try"


def test_a_function_that_raises_says_so():
    def broken(model_fn, opt, x_batch, y_batch, num_gpus):
        return x_batch.no_such_attribute
    assert "AttributeError" in problems(broken)


def test_the_lessons_solution_passes_the_check():
    source = "\n".join(src for kind, src in solution(NAME).cells if kind == "code")
    exercises._revealed.discard(NAME)
    namespace = {"tf": tf, "average_gradients": average_gradients, "check": check}
    exec(source.replace(f"check(tower_train_op, exercise='{NAME}')", ""), namespace)
    assert check(namespace["tower_train_op"], exercise=NAME)


def test_wrong_wrong_wrong_right_never_shows_the_solution_before_it_is_asked_for():
    assert_wrong_wrong_wrong_right(NAME, (reuse_missing, summed, applied_per_tower),
                                   tower_train_op)
