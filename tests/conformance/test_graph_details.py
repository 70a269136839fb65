"""Conformance of graph-building details: the same program built on tfteach and on
TensorFlow's compat.v1, and what each graph reports compared (attrs, control inputs, scope
names, collections, gradient values and placement, 'Originally defined at').

Runs only where TensorFlow is installed; otherwise the whole module skips. Error messages
are compared up to tfteach's added ``Hint:`` line.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach

BOTH = (tfteach, tf1)


def on_both(program):
    """``program(tf)`` in a fresh graph of each runtime: [tfteach's result, TF's result]."""
    out = []
    for mod in BOTH:
        with mod.Graph().as_default():
            out.append(program(mod))
    return out


def outcome(fn):
    """What ``fn()`` returns, or its error class and TF's part of the message."""
    try:
        return fn()
    except ValueError as e:
        return "ValueError", str(e).split("\nHint:")[0]


def test_get_attr_class_without_colocation_raises_as_in_tensorflow():
    def program(tf):
        a = tf.constant(1.0, name="a")
        with tf.colocate_with(a):
            b = tf.identity(a, name="b")
        return outcome(lambda: a.op.get_attr("_class")), b.op.get_attr("_class")
    ours, theirs = on_both(program)
    assert ours == theirs
    assert ours[0] == ("ValueError", "Operation 'a' has no attr named '_class'.")


def test_control_inputs_match_tensorflow():
    def program(tf):
        a, x, y = (tf.constant(v, name=n) for v, n in ((0.0, "a"), (1.0, "x"), (2.0, "y")))
        with tf.control_dependencies([x]):
            ops = [tf.add(x, y, name="c")]
            ops.append(tf.identity(ops[0], name="d"))        # input built in the block
            ops.append(tf.identity(y, name="e"))
            with tf.control_dependencies([y, x]):
                ops.append(tf.identity(ops[0], name="f"))
                ops.append(tf.identity(a, name="h"))
            with tf.control_dependencies(None):
                ops.append(tf.identity(a, name="n"))
        return {t.op.name: [c.name for c in t.op.control_inputs] for t in ops}
    ours, theirs = on_both(program)
    assert ours == theirs


ROOT_NAMES = ["foo:0", "_foo", "-foo", "/foo", ".foo", "foo bar", "a.b-c", "foo/", "9x", ">x"]
NESTED_NAMES = ["foo:0", "_foo", "-foo", "/foo", "foo bar", "a/b", "x/"]


def scope_outcomes(tf):
    def opened(name):
        def fn():
            with tf.name_scope(name) as scope:
                return scope
        return outcome(fn)
    root = [opened(n) for n in ROOT_NAMES]
    with tf.name_scope("outer"):
        nested = [opened(n) for n in NESTED_NAMES]
    return root, nested


def test_name_scope_validation_matches_tensorflow():
    ours, theirs = on_both(scope_outcomes)
    assert ours == theirs


def test_get_collection_scope_regex_matches_tensorflow():
    def program(tf):
        for n in ("tower_0/w", "tower_1/w", "tower_2/w", "atower_0/w", "a/b"):
            tf.add_to_collection("vars", tf.constant(0.0, name=n))
        tf.add_to_collection("vars", 7)
        return [[t.op.name for t in tf.get_collection("vars", s)]
                for s in ("tower_[01]", "a.*", "w", "", "tower_\\d/")]
    ours, theirs = on_both(program)
    assert ours == theirs


def unconnected(tf, how):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="w")
    i = tf.constant([1, 2], name="i")
    grads = tf.gradients(tf.reduce_sum(x * 2.0), [x, w, i], unconnected_gradients=how)
    if any(g is None for g in grads):
        return [g is None for g in grads]
    with tf.Session() as sess:
        return sess.run(grads, {x: [[1.0, 2.0, 3.0]]})


@pytest.mark.parametrize("how", ["zero", "none", "ZERO", "ones"])
def test_unconnected_gradients_match_tensorflow(how):
    def program(tf):
        return outcome(lambda: unconnected(tf, getattr(tf.UnconnectedGradients,
                                                        how.upper(), how)))
    ours, theirs = on_both(program)
    if isinstance(theirs, list) and not isinstance(theirs[0], bool):
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)
            assert a.dtype == b.dtype
    else:
        assert ours == theirs


def gradient_sums(tf, colocate):
    with tf.device("/cpu:1"):
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.Variable([1.0, 2.0, 3.0], name="w")
    with tf.device("/cpu:2"):
        a = tf.multiply(w, x, name="a")
    with tf.device("/cpu:0"):
        y = tf.reduce_sum(a + tf.multiply(w, w, name="b"), name="y")
    with tf.device("/cpu:2"):
        tf.gradients(y, w, colocate_gradients_with_ops=colocate)
    sums = [op for op in tf.get_default_graph().get_operations() if op.type == "AddN"]
    return {op.name: (op.device, outcome(lambda op=op: op.get_attr("_class")),
                      [t.device for t in op.inputs]) for op in sums}


def test_colocated_gradient_sums_are_placed_as_in_tensorflow():
    ours, theirs = on_both(lambda tf: gradient_sums(tf, True))
    assert ours == theirs
    assert ours["gradients/AddN_1"][:2] == ("/device:CPU:1", [b"loc:@w"])


def test_gradient_sum_on_one_device_is_colocated_with_a_part_as_in_tensorflow():
    """Without colocation every part is on cpu:2: one AddN, colocated with its first part
    (which part comes first follows each runtime's traversal, so only its device is
    compared by name)."""
    ours, theirs = on_both(lambda tf: gradient_sums(tf, False))
    (name, (dev, cls, _)), = ours.items()
    assert list(theirs) == [name] and theirs[name][0] == dev == "/device:CPU:2"
    assert re.fullmatch(rb"loc:@gradients/[ab]_grad/\w+", cls[0])
    assert re.fullmatch(rb"loc:@gradients/[ab]_grad/\w+", theirs[name][1][0])


def define_twice(tf):
    tf.get_variable("v", [1])
    return outcome(lambda: tf.get_variable("v", [1]))


def test_originally_defined_at_names_the_same_user_frames_as_tensorflow():
    ours, theirs = on_both(define_twice)
    frames = [re.findall(r'File "([^"]+)", line (\d+), in (\S+)', text.split(
        "Originally defined at:")[1]) for _, text in (ours, theirs)]
    assert frames[0] == frames[1]                     # innermost first, at most five
    assert frames[0][0][0] == __file__ and frames[0][0][2] == "define_twice"
