"""Learning-rate schedules and ``tf.train.ExponentialMovingAverage`` against TensorFlow's
compat.v1: each schedule's value step by step (staircase, cycle, boundaries), and the
moving averages' variables, names, colocation, ``variables_to_restore`` and values over
training steps with ``num_updates``.

Runs only where TensorFlow is installed; otherwise the whole module skips.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach

STEPS = [0, 1, 7, 10, 11, 25, 40, 100]
SCHEDULES = {
    "exponential": lambda tf, s: tf.train.exponential_decay(0.1, s, 10, 0.5),
    "exponential_staircase": lambda tf, s: tf.train.exponential_decay(0.1, s, 10, 0.5, True),
    "natural_exp": lambda tf, s: tf.train.natural_exp_decay(0.1, s, 10, 0.3),
    "natural_exp_staircase": lambda tf, s: tf.train.natural_exp_decay(0.1, s, 7, 0.3, True),
    "inverse_time": lambda tf, s: tf.train.inverse_time_decay(0.5, s, 10, 2.0),
    "inverse_time_staircase": lambda tf, s: tf.train.inverse_time_decay(0.5, s, 4, 2.0, True),
    "polynomial": lambda tf, s: tf.train.polynomial_decay(0.1, s, 30, 0.001, power=2.0),
    "polynomial_cycle": lambda tf, s: tf.train.polynomial_decay(0.1, s, 10, 0.01, 0.5,
                                                                 cycle=True),
    "cosine": lambda tf, s: tf.train.cosine_decay(0.1, s, 30),
    "cosine_alpha": lambda tf, s: tf.train.cosine_decay(0.1, s, 12, alpha=0.2),
    "piecewise_constant": lambda tf, s: tf.train.piecewise_constant(
        s, [10, 25], [0.1, 0.01, 0.001]),
}


def run_schedule(tf, build):
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [], name="step")
        rate = build(tf, step)
        with tf.Session() as sess:
            return [sess.run(rate, {step: s}) for s in STEPS], rate.dtype.name


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_match_tensorflow_step_by_step(name):
    (ours, our_dtype), (theirs, their_dtype) = (run_schedule(tf, SCHEDULES[name])
                                                for tf in (tfteach, tf1))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert our_dtype == their_dtype
    assert len(set(np.round(ours, 8))) > 1          # the rate really changes


def run_moving_average(tf):
    # On the CPU: tfteach's default GPU:0 (virtual) would receive the step's value as soon
    # as it is read, before the training op increments it, as TF's GPUs do.
    with tf.Graph().as_default(), tf.device("/cpu:0"):
        w = tf.Variable([1.0, -2.0], name="w")
        b = tf.Variable(0.5, name="b")
        other = tf.Variable(3.0, name="other", trainable=False)
        step = tf.Variable(0, name="step", trainable=False)
        loss = tf.reduce_sum(w * w) + b * 3.0
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        ema = tf.train.ExponentialMovingAverage(0.9, num_updates=step)
        with tf.control_dependencies([train]):
            train_and_average = ema.apply([w, b])
        shadows = [ema.average(w), ema.average(b)]
        facts = ([v.name for v in shadows], ema.average_name(w), train_and_average.type,
                 train_and_average.name, [v.op.colocation_groups() for v in shadows],
                 sorted(ema.variables_to_restore()), shadows[0] in tf.global_variables(),
                 shadows[0] in tf.trainable_variables(),
                 [v.name for v in tf.get_collection(tf.GraphKeys.MOVING_AVERAGE_VARIABLES)],
                 other.name)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = [sess.run(shadows)]
            for _ in range(4):
                sess.run(train_and_average)
                values.append(sess.run(shadows))
        return facts, values


def test_moving_averages_match_tensorflow():
    (our_facts, ours), (their_facts, theirs) = (run_moving_average(tf) for tf in (tfteach, tf1))
    assert our_facts == their_facts
    for a, b in zip(ours, theirs, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_allclose(x, y, rtol=1e-6)
    assert not np.allclose(ours[0][0], ours[-1][0])     # the averages moved
