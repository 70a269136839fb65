"""tfteach.lessons: exercise checks and their feedback."""
from __future__ import annotations

import numpy as np

import tfteach as tf
from tfteach.lessons import check, check_placement, device_matches
from tfteach.notebook.placement_cell import PlacementOptions, run_placement_cell

EXERCISE = """
x = tf.constant([[1.0, 2.0]], name='x')
with tf.device('/gpu:1'):
    product = tf.matmul(x, tf.constant([[1.0], [1.0]], name='w'), name='product')
with tf.device('/cpu:0'):
    total = tf.add(product, product, name='total')
total
"""


def _run(source: str):
    return run_placement_cell(source, PlacementOptions(run=True), {"tf": tf})


def test_right_answer_passes():
    result = _run(EXERCISE)
    feedback = check_placement(result, {"product": "GPU:1", "total": "/cpu:0"}, value=[[6.0]])
    assert feedback and feedback.text() == "Correct: the placement. Well done!"
    assert "#1E8449" in feedback._repr_mimebundle_()["text/html"]
    result.close()


def test_wrong_device_names_the_op_and_says_what_to_do():
    result = _run(EXERCISE)
    feedback = check_placement(result, {"product": "/gpu:0"})
    assert not feedback
    assert feedback.problems == ["'product' is on GPU:1, not on /gpu:0"]
    assert feedback.text().endswith("Hint: create 'product' inside `with tf.device('/gpu:0'):`")
    result.close()


def test_missing_op_and_wrong_value_are_both_reported():
    result = _run(EXERCISE)
    feedback = check_placement(result, {"sum": "/cpu:0"}, value=[[5.0]])
    assert feedback.problems == ["there is no op named 'sum'",
                                 "the value is [[6.]], expected [[5.0]]"]
    assert "name='sum'" in feedback.text()
    result.close()


def test_a_failed_cell_is_reported_with_its_hint():
    result = run_placement_cell("with tf.device('/gpu:4'):\n    x = tf.constant(1.0)",
                                PlacementOptions(), {"tf": tf})
    feedback = check_placement(result, {"x": "/gpu:0"})
    assert feedback.problems == ["the cell failed with InvalidArgumentError"]
    assert "allow_soft_placement" in feedback.text()


def test_check_compares_numbers_and_arrays_within_tolerance():
    assert check(np.float32(0.1) * 3, 0.3, what="the sum")
    assert not check([1, 2], [1, 3])
    wrong = check(2, 3, what="the number of GPUs", hint="count the GPU lines")
    assert wrong.text() == ("Not yet: the number of GPUs.\n- expected 3, got 2\n"
                            "Hint: count the GPU lines")
    assert check("GPU:0", "GPU:0")


def test_devices_match_on_the_fields_given():
    full = "/job:localhost/replica:0/task:0/device:GPU:1"
    assert device_matches(full, "GPU:1") and device_matches(full, "/gpu:1")
    assert device_matches(full, "/job:localhost/device:GPU:1")
    assert not device_matches(full, "/cpu:0") and not device_matches(full, "/job:worker")


def test_check_compares_a_list_of_arrays_of_different_shapes_part_by_part():
    from tfteach.lessons import check

    ours = [np.full([2, 3], 2.5), np.arange(3.0)]
    assert check([np.full([2, 3], 2.5), np.arange(3.0)], ours, what="the gradients")
    assert not check([np.full([2, 3], 1.0), np.arange(3.0)], ours, what="the gradients")
