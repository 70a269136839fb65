"""Plans with control flow run in frames (tfteach.runtime.frames): dead tensors, iterations
in the step stats, a fetched dead tensor, loops whose length is fed, gradients of a loop
whose iteration count is known only at run time, and of a loop nested in a loop's body."""
from __future__ import annotations

import numpy as np
import pytest

import tfteach as tf
from tfteach.framework.graph_io import copy_graph


def test_fetching_a_tensor_of_the_untaken_branch_says_why():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(3.0)
    inside = []
    y = tf.cond(p, lambda: inside.append(x * 2.0) or inside[0], lambda: x)
    with tf.Session() as sess:
        assert sess.run([y, inside[0]], {p: True}) == [6.0, 6.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Retval.1. does not have "
                                                                 "value") as info:
            sess.run([y, inside[0]], {p: False})
    assert "Hint:" in str(info.value) and inside[0].name in str(info.value)


def test_each_iteration_shows_in_the_step_stats():
    n = tf.placeholder(tf.int32, [])
    _, y = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * 2.0), [0, 1.0])
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        out = sess.run(y, {n: 5}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                       run_metadata=meta)
    assert out == 32.0
    names = [s.node_name for d in meta.step_stats.dev_stats for s in d.node_stats]
    assert names.count("while/mul") == 5 and names.count("while/LoopCond") == 6
    assert names.count("while/Exit_1") == 1


def test_a_loop_runs_as_often_as_the_fed_count_and_its_gradient_follows():
    x = tf.placeholder(tf.float32, [])
    n = tf.placeholder(tf.int32, [])
    _, y = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, a * x), [0, 1.0])
    dy = tf.gradients(y, x)[0]
    with tf.Session() as sess:
        for count in (0, 1, 4, 7):
            value, grad = sess.run([y, dy], {x: 1.5, n: count})
            assert value == pytest.approx(1.5 ** count)
            assert grad == pytest.approx(count * 1.5 ** (count - 1) if count else 0.0)


def test_a_loop_and_a_cond_survive_a_graph_def_round_trip():
    x = tf.placeholder(tf.float32, [], name="x")
    y = tf.while_loop(lambda a: a < 100.0, lambda a: tf.cond(a > 10.0, lambda: a * 3.0,
                                                               lambda: a + 4.0), [x])
    g = copy_graph(tf.get_default_graph())
    with tf.Session(graph=g) as sess:
        assert sess.run(y.name, {"x:0": 1.0}) == 117.0


def test_a_while_loop_inside_a_loop_body_is_differentiated_per_outer_iteration():
    """The inner loop runs 4 times in the first outer iteration and not at all in the
    second: y = x ** 4 there, and its backward loop runs as often in each."""
    x = tf.placeholder(tf.float32, [])

    def body(i, a):
        return i + 1, tf.while_loop(lambda b: b < 10.0, lambda b: b * x, [a])
    _, y = tf.while_loop(lambda i, a: i < 2, body, [0, 1.0])
    dy = tf.gradients(y, x)[0]
    with tf.Session() as sess:
        assert sess.run([y, dy], {x: 2.0}) == [16.0, 32.0]
        assert sess.run([y, dy], {x: 11.0}) == [11.0, 1.0]


def test_cond_and_loop_ops_go_where_tf_puts_them():
    """A cond's Switch is colocated with its data input, as TF's."""
    with tf.device("/cpu:0"):
        v = tf.Variable(np.float32(2.0))
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: v * 3.0, lambda: tf.constant(1.0))
    switch = [op for op in tf.get_default_graph().get_operations()
              if op.type == "Switch" and op.inputs[0].op.name == "Variable/read"][0]
    assert switch.colocation_groups() == [b"loc:@Variable"]
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y, {p: True}) == 6.0


def test_an_endless_loop_ends_at_the_steps_deadline():
    i = tf.while_loop(lambda i: i >= 0, lambda i: i + 1, [0])
    with tf.Session() as sess, pytest.raises(tf.errors.DeadlineExceededError) as info:
        sess.run(i, options=tf.RunOptions(timeout_in_ms=200))
    assert "while_loop" in str(info.value)


def test_a_dequeue_in_a_branch_waits_until_the_deadline():
    q = tf.FIFOQueue(2, tf.float32, shapes=[])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: q.dequeue(), lambda: tf.constant(-1.0))
    with tf.Session() as sess:
        assert sess.run(y, {p: False}) == -1.0
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(y, {p: True}, options=tf.RunOptions(timeout_in_ms=200))
        sess.run(q.enqueue(4.0))
        assert sess.run(y, {p: True}) == 4.0


def test_a_loop_gradient_survives_a_graph_def_export_and_import():
    """A GraphDef's back edges (Merge <- NextIteration, the counter <- history pushes) are
    set after their sources are imported."""
    x = tf.placeholder(tf.float32, [], name="x")
    _, w = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, 1.0])
    dw = tf.gradients(w, x)[0]
    graph_def = tf.get_default_graph().as_graph_def()
    with tf.Graph().as_default():
        tf.import_graph_def(graph_def, name="")
        with tf.Session() as sess:
            assert sess.run([w.name, dw.name], {"x:0": 2.0}) == [8.0, 12.0]


def test_a_loop_counts_each_iterations_values_against_the_device_and_returns_them():
    """Values held in a loop are charged to the device until their last read: the peak
    holds a few iterations' arrays, not all hundred, and every byte comes back."""
    with tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [256, 256])
        _, y = tf.while_loop(lambda i, a: i < 100, lambda i, a: (i + 1, a * 1.01 + x),
                             [0, tf.zeros([256, 256])])
    sess = tf.Session()
    dev = [d for d in sess.devices if d.name.endswith("GPU:0")][0]
    before, one = dev.memory.used, 256 * 256 * 4
    dev.memory.peak = before
    out = sess.run(y, {x: np.ones((256, 256), np.float32)})
    assert out[0, 0] == pytest.approx((1.01 ** 100 - 1) / 0.01, rel=1e-4)
    assert dev.memory.used == before
    assert one < dev.memory.peak - before <= 12 * one
