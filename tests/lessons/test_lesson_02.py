"""Lesson 2 (placing by hand and by function) passes nbval, and its HTML export shows the
nested-scope placement, the device function's CPU variables and the int32 kernel error, in
every language."""
from __future__ import annotations

import pytest
from lesson_tools import (assert_passes_nbval, assert_tf_section_ends_the_lesson, code_spans,
                          correct, counterpart, hint_label, printed, shown, svgs)

LESSON_NAME = "02_placing_by_hand.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(lesson, tmp_path):
    assert_passes_nbval(lesson, tmp_path)


def test_export_draws_each_placement(exported):
    graphs = [s for s in svgs(exported) if "cluster_dev_" in s]
    assert len(graphs) >= 7
    assert any(">w/read</text>" in s and ">CPU:0</text>" in s and ">GPU:1</text>" in s
               for s in graphs), "the device function's drawing has w on the CPU, y on GPU:1"


def test_export_explains_the_int32_error_and_checks_the_exercises(exported, lang):
    assert "InvalidArgumentError" in exported
    assert "no supported kernel for GPU devices" in exported
    assert shown(exported, hint_label(lang))
    assert shown(exported, correct("the placement", lang))
    assert shown(exported, correct("the requests of p, q and r", lang))


def test_the_lesson_ends_with_the_same_program_for_real_tensorflow(lesson, exported):
    """The "On real TensorFlow" section: a heading of the page, with the program for TF."""
    assert_tf_section_ends_the_lesson(lesson, exported)


def test_requests_are_what_the_code_asked_for(lesson):
    assert printed(lesson, "print('a asks for', repr(a.op.device))").split("\n")[:2] == [
        "a asks for '/device:GPU:1'", "b asks for ''"]


def test_nested_blocks_merge_innermost_first_and_none_stops_the_walk(lesson):
    requests = printed(lesson, "for op in tf.get_default_graph().get_operations():\n"
                             "    print(f\"{op.name}: ")
    assert requests.split("\n")[:4] == ["a: /job:worker/task:1/device:GPU:0",
                                        "b: /job:worker/task:1/device:GPU:1",
                                        "c: (no request)", "d: /device:CPU:0"]
    placed = printed(lesson, "asked for {op.device or '(nothing)':32}")
    for line in ("b          asked for /device:CPU:0                    got CPU:0",
                 "c          asked for /job:localhost/device:GPU:1      got GPU:1",
                 "d          asked for (nothing)                        got GPU:0"):
        assert line in placed


def test_the_device_function_puts_w_and_its_helpers_on_the_cpu_and_x_beside_y(lesson):
    """The text: w, w/Assign, w/read on the CPU; y on GPU:1; x (no request) next to y."""
    text = printed(lesson, "with tf.device(assign_to_device('/gpu:1')):")
    for line in ("w (VariableV2) -> CPU:0", "w/Assign (Assign) -> CPU:0",
                 "w/read (Identity) -> CPU:0", "y (MatMul) -> GPU:1", "x (Const) -> GPU:1"):
        assert line in text


def test_the_textbooks_device_function_leaves_the_variable_on_gpu_0(lesson):
    text = printed(lesson, 'if op.type == "Variable":')
    assert "Variable: (VariableV2): /job:localhost/replica:0/task:0/device:GPU:0" in text
    assert "CPU:0" not in text.split("Device mapping")[1]


def test_colocation_and_ref_edges_keep_w_sq_and_inc_with_w(lesson):
    """The text: w's helpers and w_sq are in w's group; inc is in a group of its own
    (``loc:@inc``) and still runs on w's device, through its reference input."""
    text = printed(lesson, "groups = ', '.join(g.decode() for g in op.colocation_groups())")
    for helper in ("w/Assign ", "w/read   "):
        assert f"{helper}  group loc:@w       asked for /device:CPU:0   got CPU:0" in text
    assert "w_sq       group loc:@w       asked for /device:CPU:0   got CPU:0" in text
    assert "inc        group loc:@inc     asked for /device:GPU:1   got CPU:0" in text
    explained = counterpart(lesson, "`w_sq` joined `w`'s group").source
    assert {"loc:@inc", "GPU:1", "CPU:0"} <= set(code_spans(explained))


def test_soft_placement_moves_the_int32_counters_whole_group_and_int64_stays(lesson):
    text = printed(lesson, "step = tf.assign_add(counter, 1, name='step')")
    assert all(f"{op} -> CPU:0" in text for op in ("counter (VariableV2)",
               "counter/Assign (Assign)", "counter/read (Identity)", "step (AssignAdd)"))
    text = printed(lesson, "counter = tf.Variable(0, dtype=tf.int64, name='counter')\n    weights")
    assert "counter (VariableV2) -> GPU:0" in text and "weights (VariableV2) -> GPU:0" in text
