"""Updates from two threads at once, as TF makes them: a non-locking update writes into the
variable's buffer (two concurrent steps may race on single elements, never lose a whole
update), reads each slot once (Adam never sees a negative ``v``), and ``use_locking=True``
serialises whole updates. Fetched values are copies taken when the step ends."""
import threading

import numpy as np
import pytest

import tfteach as tf

SIZE = 50_000     # large enough that NumPy lets the other thread run during an update
STEPS = 400


def _in_two_threads(sess, fetches, steps=STEPS):
    errors = []

    def work():
        try:
            for _ in range(steps):
                sess.run(fetches)
        except Exception as e:      # noqa: BLE001 - reported by the assertion below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("use_locking", [False, True])
def test_two_threads_of_gradient_descent_lose_no_whole_update(use_locking):
    v = tf.Variable(tf.zeros([SIZE]))
    opt = tf.train.GradientDescentOptimizer(1.0, use_locking=use_locking)
    train = opt.apply_gradients([(tf.fill([SIZE], -1.0), v)])
    with tf.Session() as sess:
        sess.run(v.initializer)
        _in_two_threads(sess, train)
        out = sess.run(v)
    # A lost whole update leaves every element short; an element race only some of them.
    assert out.max() == 2 * STEPS
    if use_locking:
        assert (out == 2 * STEPS).all()


@pytest.mark.parametrize("use_locking", [False, True])
def test_two_threads_counting_with_assign_add_reach_the_exact_total(use_locking):
    counter = tf.Variable(0.0)
    row = tf.Variable(tf.zeros([SIZE]))
    add = [tf.assign_add(counter, 1.0, use_locking=use_locking),
           tf.assign_add(row, tf.ones([SIZE]), use_locking=use_locking)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _in_two_threads(sess, add)
        total, out = sess.run([counter, row])
    assert total == 2 * STEPS      # one element: the add is one instruction, as in TF
    assert out.max() == 2 * STEPS
    if use_locking:
        assert (out == 2 * STEPS).all()


def test_adam_in_two_threads_never_gives_nan():
    # Sparse gradients: most elements of v are still 0 when the other thread gives them
    # their first; a kernel that read v twice across that write computed a negative v
    # (0 + (0 - v') * (1 - beta2)) and NaN from its sqrt (seen in 4 of 4 runs here).
    size = 200_000
    v = tf.Variable(tf.zeros([size]))
    grad = tf.random_normal([size], seed=1) * tf.cast(
        tf.random_uniform([size], seed=2) < 0.005, tf.float32)
    train = tf.train.AdamOptimizer(0.01).apply_gradients([(grad, v)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _in_two_threads(sess, train, steps=300)
        out = sess.run(v)
    assert np.isfinite(out).all()


def test_a_fetched_value_is_a_copy_taken_when_the_step_ends():
    v = tf.Variable(tf.zeros([4]))
    read = tf.identity(v)
    with tf.control_dependencies([read]):
        bump = tf.assign_add(v, tf.ones([4]))
    with tf.Session() as sess:
        sess.run(v.initializer)
        before, after = sess.run([read, bump])
        kept = sess.run(read)
        sess.run(bump)
        kept[0] = 42.0
        now = sess.run(v)
    # TF's read aliases the variable within the step: both show the value after the add.
    np.testing.assert_array_equal(before, [1, 1, 1, 1])
    np.testing.assert_array_equal(after, [1, 1, 1, 1])
    np.testing.assert_array_equal(kept, [42, 1, 1, 1])      # a copy: later steps leave it
    np.testing.assert_array_equal(now, [2, 2, 2, 2])
