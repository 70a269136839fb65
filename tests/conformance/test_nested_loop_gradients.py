"""Gradients of nested control flow against TensorFlow's compat.v1 (control flow v1): a
while loop in another loop's body (fixed and run-time counts, ``maximum_iterations``, three
deep), a cond in a loop's body that takes a different branch per iteration, a loop in a cond
in a loop, an RNN-like loop over time with an inner fixed-point loop, TensorArrays
(``map_fn``, ``scan``, a dynamic size) in a loop's body and ``tf.gradients`` inside one.

Runs only where TensorFlow is installed; otherwise the whole module skips.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach

V = np.array([0.5, -1.5, 2.0], np.float32)


def _double_sum(tf, x, v):
    """sum over i < 4, j < 3 of x * v * i * j."""
    def outer(i, s):
        _, s = tf.while_loop(lambda j, t: j < 3, lambda j, t: (
            j + 1, t + x * v * tf.cast(i * j, tf.float32)), [0, s])
        return i + 1, s
    return tf.while_loop(lambda i, s: i < 4, outer, [0, tf.zeros([3])])[1]


def _run_time_counts(tf, x, v):
    """The inner loop runs i times in outer iteration i."""
    def outer(i, s):
        _, s = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t * x + v), [0, s])
        return i + 1, s * 0.5
    return tf.while_loop(lambda i, s: i < 4, outer, [0, v])[1]


def _cond_per_iteration(tf, x, v):
    """Even iterations take one branch, odd ones the other."""
    def body(i, y):
        return i + 1, tf.cond(tf.equal(i % 2, 0), lambda: y * x, lambda: tf.sin(y) + v)
    return tf.while_loop(lambda i, y: i < 5, body, [0, v])[1]


def _rnn_fixed_point(tf, x, v):
    """Over 4 time steps, h is the fixed point of z = tanh(z / 2 + input + 0.3 h), iterated
    until it moves less than 1e-3 (at most 20 times)."""
    inputs = tf.stack([v * x, v + x, v - x, v * 0.5])

    def step(t, h):
        def settle(z):
            return tf.tanh(0.5 * z + inputs[t] + 0.3 * h)

        def moving(k, z):
            return tf.logical_and(k < 20, tf.reduce_max(tf.abs(z - settle(z))) > 1e-3)
        return t + 1, tf.while_loop(moving, lambda k, z: (k + 1, settle(z)), [0, h])[1]
    return tf.while_loop(lambda t, h: t < 4, step, [0, tf.zeros([3])])[1]


def _maximum_iterations(tf, x, v):
    def outer(y):
        return tf.while_loop(lambda z: tf.reduce_sum(z) < 100.0, lambda z: z * x + 1.0, [y],
                             maximum_iterations=3) * 0.5
    return tf.while_loop(lambda y: tf.reduce_sum(y) < 1000.0, outer, [v], maximum_iterations=4)


def _three_deep(tf, x, v):
    def middle(i):
        def body(j, t):
            _, t = tf.while_loop(lambda k, u: k < j + 1, lambda k, u: (
                k + 1, u * x + tf.cast(i, tf.float32) * v), [0, t])
            return j + 1, t * 0.5
        return body
    return tf.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, tf.while_loop(
        lambda j, t: j < 2, middle(i), [0, s])[1]), [0, v])[1]


def _loop_in_cond_in_loop(tf, x, v):
    def body(i, y):
        return i + 1, tf.cond(i > 1, lambda: tf.while_loop(
            lambda k, z: k < i, lambda k, z: (k + 1, z * x), [0, y])[1], lambda: y + v * x)
    return tf.while_loop(lambda i, y: i < 4, body, [0, v])[1]


def _map_fn_in_loop(tf, x, v):
    return tf.while_loop(lambda i, s: i < 3, lambda i, s: (
        i + 1, tf.map_fn(lambda e: e * x + tf.sin(e), s)), [0, v])[1]


def _scan_in_loop(tf, x, v):
    return tf.while_loop(lambda i, s: i < 3, lambda i, s: (
        i + 1, tf.scan(lambda a, e: a * x + e, s) * 0.5), [0, v])[1]


def _tensor_array_sized_at_run_time(tf, x, v):
    """As dynamic_rnn: arrays sized by tf.shape of the outer loop's variable, read and
    written by an inner loop."""
    def outer(i, s):
        n = tf.shape(s)[0]
        rows = tf.TensorArray(tf.float32, size=n).unstack(s)

        def step(t, out, h):
            h = tf.tanh(rows.read(t) * x + h)
            return t + 1, out.write(t, h), h
        _, out, _ = tf.while_loop(lambda t, *_: t < n, step, (
            0, tf.TensorArray(tf.float32, size=n), tf.zeros([2])))
        return i + 1, out.stack() * 0.5 + s
    return tf.while_loop(lambda i, s: i < 3, outer, [0, tf.reshape(tf.concat([v, v], 0),
                                                                   [3, 2])])[1]


def _gradients_in_the_body(tf, x, v):
    """Newton's method for z ** 3 = x * v, with f' from tf.gradients in the loop's body."""
    def body(i, z):
        f = z * z * z - x * v
        return i + 1, z - f / tf.gradients(tf.reduce_sum(f), z)[0]
    return tf.while_loop(lambda i, z: i < 4, body, [0, v + 3.0])[1]


BUILDS = {f.__name__[1:]: f for f in (
    _double_sum, _run_time_counts, _cond_per_iteration, _rnn_fixed_point,
    _maximum_iterations, _three_deep, _loop_in_cond_in_loop, _map_fn_in_loop, _scan_in_loop,
    _tensor_array_sized_at_run_time, _gradients_in_the_body)}


def run(tf, build, x_values):
    """The output and its gradients w.r.t. x and v, for each x (one graph, one session)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        v = tf.placeholder(tf.float32, [3], name="v")
        y = build(tf, x, v)
        fetches = [y] + tf.gradients(tf.reduce_sum(y * y), [x, v])
        with tf.Session() as sess:
            return [sess.run(fetches, {x: value, v: V}) for value in x_values]


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_nested_control_flow_gradients_match_tensorflow(name):
    ours = run(tfteach, BUILDS[name], [0.7, -1.3])
    theirs = run(tf1, BUILDS[name], [0.7, -1.3])
    for mine, tfs in zip(ours, theirs, strict=True):
        assert len(mine) == len(tfs) == 3
        for a, b in zip(mine, tfs, strict=True):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-5)


def _newton_through_a_loop(tf, x):
    """Newton's method for p(z) = x, p(z) = z ** 3 computed by a loop; p' by tf.gradients
    in the outer loop's body, through that loop."""
    def body(i, z):
        _, p = tf.while_loop(lambda k, p: k < 3, lambda k, p: (k + 1, p * z), [0, tf.ones_like(z)])
        f = p - x
        return i + 1, z - f / tf.gradients(tf.reduce_sum(f), z)[0]
    return tf.while_loop(lambda i, z: i < 4, body, [0, tf.constant([3.0, 0.5])])[1]


def test_a_gradient_through_a_loop_in_a_loop_body_runs_and_is_not_differentiated_again():
    """TF computes it (a backward loop per outer iteration) but refuses its second-order
    gradient; so does tfteach."""
    values = []
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [2])
            y = _newton_through_a_loop(tf, x)
            with tf.Session() as sess:
                values.append(sess.run(y, {x: [5.0, -2.0]}))
            with pytest.raises(TypeError, match="Second-order gradient for while loops"):
                tf.gradients(y, x)
    np.testing.assert_allclose(values[0], values[1], rtol=1e-5)


def _train_in_a_loop(tf):
    """Five gradient steps taken inside a while loop's body: the losses' sum, the weights."""
    with tf.Graph().as_default():
        w = tf.Variable([1.0, -2.0])
        x = tf.placeholder(tf.float32, [2])

        def body(i, total):
            loss = tf.reduce_sum(tf.square(w * x - 1.0))
            with tf.control_dependencies([tf.assign_sub(w, 0.1 * tf.gradients(loss, w)[0])]):
                return i + 1, total + loss
        _, total = tf.while_loop(lambda i, t: i < 5, body, [0, 0.0])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            return sess.run(total, {x: [0.5, 2.0]}), sess.run(w)


def test_gradients_taken_in_a_loop_body_train_as_in_tensorflow():
    ours, theirs = _train_in_a_loop(tfteach), _train_in_a_loop(tf1)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_a_gradient_in_a_loop_body_through_a_loop_variables_initial_value_is_refused():
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, [3], name="x")
            with pytest.raises(ValueError, match="Cannot compute gradient inside while loop "
                                                 "with respect to op 'x'"):
                tf.while_loop(lambda i, a: i < 2, lambda i, a: (
                    i + 1, a + tf.gradients(tf.reduce_sum(tf.sin(a * x)), x)[0]), [0, x * 2.0])
