"""Concurrent updates and reads of a variable, on tfteach and on real TensorFlow: two threads
of one session updating one variable lose no whole update (with ``use_locking`` none at
all; tfteach's one-element counter counts every increment, TF's unlocked one may lose one), Adam never gives NaN, and a read
fetched with an update of the same step shows the update (TF's read aliases the variable,
which the update changes in place), while an array fetched earlier never changes."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

pytestmark = pytest.mark.conformance
RUNTIMES = pytest.mark.parametrize("tf", [tfteach, tf1], ids=["tfteach", "tf"])
SIZE = 50_000
STEPS = 300


def _two_threads(sess, fetches) -> None:
    threads = [threading.Thread(target=lambda: [sess.run(fetches) for _ in range(STEPS)])
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _count_in_two_threads(tf, use_locking: bool) -> tuple:
    """Each step adds 1 to every element of ``v`` (GD on a gradient of -1) and to ``c``."""
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([SIZE]))
        c = tf.Variable(0.0)
        opt = tf.train.GradientDescentOptimizer(1.0, use_locking=use_locking)
        step = [opt.apply_gradients([(tf.fill([SIZE], -1.0), v)]),
                tf.assign_add(c, 1.0, use_locking=use_locking)]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _two_threads(sess, step)
            return tuple(sess.run([v, c]))


@RUNTIMES
@pytest.mark.parametrize("use_locking", [False, True], ids=["unlocked", "locked"])
def test_two_threads_lose_no_whole_update(tf, use_locking):
    v, c = _count_in_two_threads(tf, use_locking)
    if tf is tf1 and not use_locking:
        # A difference on purpose: TF's unlocked AssignAdd races (read, add, write), so its
        # counter can lose an increment now and then (599 of 600 seen on a loaded CI run);
        # tfteach's unlocked update of one element is never lost.
        assert 2 * STEPS - 10 <= c <= 2 * STEPS and v.min() >= STEPS and v.max() <= 2 * STEPS
        return
    assert v.max() == 2 * STEPS and c == 2 * STEPS
    if use_locking:
        assert (v == 2 * STEPS).all()


@RUNTIMES
def test_adam_in_two_threads_stays_finite(tf):
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([SIZE]))
        # sparse: many elements of v are still 0 when the other thread gives them their first
        grad = tf.random_normal([SIZE], seed=1) * tf.cast(
            tf.random_uniform([SIZE], seed=2) < 0.005, tf.float32)
        train = tf.train.AdamOptimizer(0.01).apply_gradients([(grad, v)])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            _two_threads(sess, train)
            assert np.isfinite(sess.run(v)).all()


@RUNTIMES
def test_a_read_fetched_with_an_update_shows_it_and_a_fetched_array_stays(tf):
    with tf.Graph().as_default():
        v = tf.Variable(tf.zeros([3]))
        read = tf.identity(v)
        with tf.control_dependencies([read]):
            bump = tf.assign_add(v, tf.ones([3]))
        gs = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(v * v),
                                                                global_step=gs)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            seen = sess.run([read, bump])
            kept = sess.run(read)
            sess.run(bump)
            steps = [int(sess.run([train, gs])[1]) for _ in range(3)]
    assert [a.tolist() for a in seen] == [[1.0] * 3, [1.0] * 3]
    assert kept.tolist() == [1.0] * 3
    assert steps == [1, 2, 3]
