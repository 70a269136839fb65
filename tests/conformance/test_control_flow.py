"""``tf.cond``, ``tf.case`` and ``tf.while_loop`` against TensorFlow's compat.v1 (control flow
v1: Switch, Merge, Enter, Exit, NextIteration): values and gradients of each, the op types
they build, the untaken branch that never runs, and the errors TF gives at build time.

Runs only where TensorFlow is installed; otherwise the whole module skips.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach

V = np.array([0.5, -1.5, 2.0], np.float32)


def _cond(tf, x, v):
    return [tf.cond(x > 0, lambda: x * x + v, lambda: tf.sin(x) * v)]


def _cond_const_branch(tf, x, v):
    return [tf.cond(x > 1, lambda: tf.constant(7.0), lambda: x * 3.0)]


def _cond_tuple(tf, x, v):
    a, b = tf.cond(x < 0, lambda: (x * 2.0, v + x), lambda: (x - 1.0, v * x))
    return [a, b]


def _nested_cond(tf, x, v):
    return [tf.cond(x > 0, lambda: tf.cond(x > 1, lambda: x * 10.0, lambda: x * x),
                    lambda: tf.cond(x < -1, lambda: -x, lambda: v * x))]


def _cond_old_names(tf, x, v):
    return [tf.cond(x < 1, fn1=lambda: v - x, fn2=lambda: v * v)]


def _case(tf, x, v):
    return [tf.case([(x > 1, lambda: x * 10.0), (x > 0, lambda: x * 5.0 + v)],
                    default=lambda: x + v)]


def _while_counter(tf, x, v):
    i = tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)])
    return [tf.cast(i, tf.float32) * x]


def _while_accumulate(tf, x, v):
    _, total = tf.while_loop(lambda i, s: i < 5,
                             lambda i, s: (i + 1, s + tf.cast(i, tf.float32) * x),
                             [tf.constant(0), tf.constant(0.0)])
    return [total]


def _while_power(tf, x, v):
    _, p = tf.while_loop(lambda i, p: i < 3, lambda i, p: (i + 1, p * x + v), [0, v])
    return [p]


def _while_fixed_shape(tf, x, v):
    _, m = tf.while_loop(lambda i, m: i < 4,
                         lambda i, m: (i + 1, tf.matmul(m, m) * 0.5 + x),
                         [tf.constant(0), tf.reshape(tf.concat([v, v, v], 0), [3, 3])])
    return [m]


def _while_shape_invariants(tf, x, v):
    _, grown = tf.while_loop(lambda i, g: i < 3, lambda i, g: (i + 1, tf.concat([g, g * x], 0)),
                             [tf.constant(0), v], shape_invariants=[
                                 tf.TensorShape([]), tf.TensorShape([None])])
    return [grown]


def _cond_in_while(tf, x, v):
    _, y = tf.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, tf.cond(
        tf.reduce_sum(y) > 2.0, lambda: y * 0.5, lambda: y * x + 1.0)), [tf.constant(0), v])
    return [y]


def _maximum_iterations(tf, x, v):
    return [tf.while_loop(lambda y: tf.reduce_sum(y) < 100.0, lambda y: y * 2.0, [v * x],
                          maximum_iterations=3)]


def _while_in_cond(tf, x, v):
    return [tf.cond(x > 0, lambda: tf.while_loop(lambda a: tf.reduce_sum(a) < 50.0,
                                                 lambda a: a * (x + 1.5), [v + 3.0]),
                    lambda: v * x)]


BUILDS = {f.__name__[1:]: f for f in (
    _cond, _cond_const_branch, _cond_tuple, _cond_old_names, _nested_cond, _case, _while_counter,
    _while_accumulate, _while_power, _while_fixed_shape, _while_shape_invariants,
    _cond_in_while, _maximum_iterations, _while_in_cond)}
NO_GRADIENT = {"while_shape_invariants"}     # TF's gradient of a growing concat: not compared


def run(tf, build, x_value):
    """Values of ``build``'s outputs and, where compared, their gradients w.r.t. x and v."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        v = tf.placeholder(tf.float32, [3], name="v")
        outs = build(tf, x, v)
        fetches = list(outs)
        if build.__name__[1:] not in NO_GRADIENT:
            loss = tf.add_n([tf.reduce_sum(o * o) for o in outs])
            fetches += [g for g in tf.gradients(loss, [x, v]) if g is not None]
        with tf.Session() as sess:
            return sess.run(fetches, {x: x_value, v: V})


@pytest.mark.parametrize("x_value", [-2.0, 0.7, 1.3])
@pytest.mark.parametrize("name", sorted(BUILDS))
def test_values_and_gradients_match_tensorflow(name, x_value):
    ours = run(tfteach, BUILDS[name], x_value)
    theirs = run(tf1, BUILDS[name], x_value)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-5)


def _op_types(tf, build):
    with tf.Graph().as_default() as g:
        build(tf, tf.placeholder(tf.float32, [], name="x"), tf.placeholder(tf.float32, [3]))
        return sorted({op.type for op in g.get_operations()} & {
            "Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"})


@pytest.mark.parametrize("name", ["cond", "while_power", "cond_in_while"])
def test_the_graph_has_tf_1_control_flow_ops(name):
    assert _op_types(tfteach, BUILDS[name]) == _op_types(tf1, BUILDS[name])


def _untaken_branch(tf):
    """Fed p, the branch not taken has an assign and a gather out of range: neither runs."""
    with tf.Graph().as_default():
        p = tf.placeholder(tf.bool, [])
        v = tf.Variable(1.0)
        table = tf.constant([1.0, 2.0])
        y = tf.cond(p, lambda: tf.assign(v, 5.0) * 1.0, lambda: tf.gather(table, 7) + v)
        with tf.Session() as sess:
            sess.run(v.initializer)
            taken = sess.run(y, {p: True}), sess.run(v)
            try:
                sess.run(y, {p: False})
                failed = None
            except tf.errors.OpError as e:
                failed = type(e).__name__
            return taken, sess.run(v), failed


def test_the_untaken_branch_never_runs():
    ours, theirs = _untaken_branch(tfteach), _untaken_branch(tf1)
    assert ours == theirs
    assert ours[0] == (5.0, 5.0) and ours[2] == "InvalidArgumentError"


def test_an_assign_in_the_untaken_branch_leaves_the_variable():
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            p = tf.placeholder(tf.bool, [])
            v = tf.Variable(1.0)
            y = tf.cond(p, lambda: tf.assign_add(v, 10.0), lambda: tf.identity(v) * 2.0)
            with tf.Session() as sess:
                sess.run(v.initializer)
                assert sess.run(y, {p: False}) == 2.0 and sess.run(v) == 1.0


def test_an_assign_in_a_loop_body_runs_once_per_iteration():
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            count = tf.Variable(0.0)

            def body(i):
                with tf.control_dependencies([tf.assign_add(count, 1.0)]):
                    return i + 1
            n = tf.while_loop(lambda i: i < 5, body, [0])
            with tf.Session() as sess:
                sess.run(count.initializer)
                assert sess.run(n) == 5 and sess.run(count) == 5.0


ERRORS = {
    "non_scalar_pred": (lambda tf: tf.cond(tf.constant([True, False]), lambda: 1.0,
                                           lambda: 2.0), ValueError, "rank 0"),
    "int_pred": (lambda tf: tf.cond(tf.constant(1), lambda: 1.0, lambda: 2.0), TypeError,
                 "expected type of bool"),
    "python_bool_pred": (lambda tf: tf.cond(True, lambda: 1.0, lambda: 2.0), TypeError,
                         "must not be a Python bool"),
    "not_callable": (lambda tf: tf.cond(tf.constant(True), lambda: 1.0, 2.0), TypeError,
                     "'false_fn' must be callable"),
    "structures": (lambda tf: tf.cond(tf.constant(True), lambda: (1.0, 2.0), lambda: 2.0),
                   ValueError, "same nested structure"),
    "dtypes": (lambda tf: tf.cond(tf.constant(True), lambda: 1.0, lambda: tf.constant(2)),
               ValueError, "must have the same type"),
    "case_pred": (lambda tf: tf.case([(tf.constant(1), lambda: 1.0)], default=lambda: 2.0),
                  TypeError, "pred must be Tensor of type bool"),
    "loop_shape": (lambda tf: tf.while_loop(lambda i: i[0] < 3, lambda i: tf.concat([i, i], 0),
                                            [tf.constant([0])]), ValueError, "shape_invariants"),
    "loop_structure": (lambda tf: tf.while_loop(lambda i: i < 3, lambda i: (i + 1, i),
                                                [tf.constant(0)]), ValueError,
                       "same nested structure"),
    "loop_cond_rank": (lambda tf: tf.while_loop(lambda i: i < 3, lambda i: i + 1,
                                                [tf.constant([0])]), ValueError, "rank 0"),
    "loop_cond_dtype": (lambda tf: tf.while_loop(lambda i: i, lambda i: i + 1,
                                                 [tf.constant(0)]), TypeError,
                        "expected type of bool"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_build_errors_match_tensorflow(name):
    build, kind, text = ERRORS[name]
    for tf in (tfteach, tf1):
        with tf.Graph().as_default(), pytest.raises(kind, match=text):
            build(tf)


def _layers_with_a_training_tensor(tf, layers, shape):
    """tf.layers' smart_cond: batch_normalization and dropout fed training=False, then True
    (outputs, then the moving mean after each step's update ops)."""
    x_value = np.linspace(-2.0, 3.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, shape)
        training = tf.placeholder(tf.bool, [])
        y = layers.batch_normalization(x, momentum=0.8, training=training)
        kept = layers.dropout(y, rate=0.5, training=training)
        updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
        mean = [v for v in tf.global_variables() if "moving_mean" in v.op.name][0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out = []
            for flag in (False, True):
                values = sess.run([y, kept] + updates, {x: x_value, training: flag})
                out += [values[0], sess.run(mean)]
                if not flag:
                    out.append(values[1])
            return out


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 2, 3)], ids=["unfused", "fused"])
def test_tf_layers_take_a_training_tensor_as_tf_does(shape):
    """Needs ``tf_keras`` (TF 2.16+ serves ``tf.compat.v1.layers`` from it); skips without."""
    pytest.importorskip("tf_keras", reason="tf.compat.v1.layers needs tf_keras on TF 2.16+")
    legacy = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    ours = _layers_with_a_training_tensor(tfteach, tfteach.layers, shape)
    theirs = _layers_with_a_training_tensor(tf1, legacy, shape)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_tensorflow_graph_def_with_a_loop_and_a_cond_runs_here():
    """TF's own GraphDef (Enter, Merge <- NextIteration back edges, Switch, LoopCond)
    imports into tfteach and gives TF's value."""
    with tf1.Graph().as_default() as g:
        x = tf1.placeholder(tf1.float32, [], name="x")
        _, w = tf1.while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, tf1.cond(
            a > 2.0, lambda: a * x, lambda: a + 1.0)), [0, 1.0])
        with tf1.Session() as sess:
            want = sess.run(w, {x: 1.5})
        data = g.as_graph_def().SerializeToString()
    with tfteach.Graph().as_default():
        tfteach.import_graph_def(data, name="")
        with tfteach.Session() as sess:
            assert sess.run(w.name, {"x:0": 1.5}) == pytest.approx(want)
