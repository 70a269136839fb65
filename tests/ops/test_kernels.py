"""Every op's CPU kernel against NumPy, run through a real Session."""
import numpy as np
import pytest

import tfteach as tf

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.standard_normal((4, 2)).astype(np.float32)
P = rng.uniform(0.5, 2.0, (3, 4)).astype(np.float32)


def run(t, feed=None):
    return tf.Session().run(t, feed)


@pytest.mark.parametrize("build, expect", [
    (lambda: tf.add(A, A), A + A),
    (lambda: tf.subtract(A, 1.0), A - 1),
    (lambda: tf.multiply(A, P), A * P),
    (lambda: tf.divide(A, P), A / P),
    (lambda: tf.matmul(A, B), A @ B),
    (lambda: tf.matmul(A, A, transpose_b=True), A @ A.T),
    (lambda: tf.matmul(A, A, transpose_a=True), A.T @ A),
    (lambda: tf.add_n([A, P, A]), A + P + A),
    (lambda: tf.log(P), np.log(P)),
    (lambda: tf.exp(A), np.exp(A)),
    (lambda: tf.sqrt(P), np.sqrt(P)),
    (lambda: tf.square(A), A * A),
    (lambda: -tf.constant(A), -A),
    (lambda: tf.reduce_sum(A), A.sum()),
    (lambda: tf.reduce_sum(A, axis=0), A.sum(0)),
    (lambda: tf.reduce_mean(A, axis=1), A.mean(1)),
    (lambda: tf.reduce_max(A, axis=[0, 1]), A.max()),
    (lambda: tf.argmax(A, 1), A.argmax(1)),
    (lambda: tf.cast(tf.equal(A, A), tf.int32), np.ones_like(A, dtype=np.int32)),
    (lambda: tf.reshape(A, [2, 6]), A.reshape(2, 6)),
    (lambda: tf.transpose(A), A.T),
    (lambda: tf.concat([A, P], 0), np.concatenate([A, P], 0)),
    (lambda: tf.split(A, 2, axis=1)[1], A[:, 2:]),
    (lambda: tf.cast(A, tf.int32), A.astype(np.int32)),
    (lambda: tf.identity(A), A),
    (lambda: tf.zeros([2, 3]), np.zeros((2, 3), np.float32)),
    (lambda: tf.ones([2], tf.int32), np.ones(2, np.int32)),
    (lambda: tf.fill([2, 2], 7.0), np.full((2, 2), 7.0, np.float32)),
    (lambda: tf.constant(A) @ tf.constant(B), A @ B),
    (lambda: tf.constant(A) < 0.0, A < 0),
])
def test_kernel_matches_numpy(build, expect):
    out = run(build())
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-6)
    assert np.asarray(out).dtype == np.asarray(expect).dtype or np.asarray(expect).dtype == np.float64


def test_scalar_fetch_is_numpy_scalar():
    out = run(tf.constant(2.0) * 3.0)
    assert out == 6.0 and isinstance(out, np.float32)


def test_random_ops_are_seeded_and_stateful():
    tf.set_random_seed(1)
    r = tf.random_normal([1000], mean=2.0, stddev=3.0)
    u = tf.random_uniform([1000], 1.0, 2.0)
    s1, s2 = tf.Session(), tf.Session()
    a1, a2 = s1.run(r), s1.run(r)
    b1 = s2.run(r)
    np.testing.assert_array_equal(a1, b1)          # same seeds, same sequence
    assert not np.array_equal(a1, a2)              # a new draw each run
    assert abs(a1.mean() - 2.0) < 0.4 and abs(a1.std() - 3.0) < 0.4
    uv = s1.run(u)
    assert uv.min() >= 1.0 and uv.max() < 2.0


def test_variables_assign_and_update():
    v = tf.Variable([1.0, 2.0], name="v")
    inc = tf.assign_add(v, [1.0, 1.0])
    dec = v.assign_sub([0.5, 0.5])
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    before = sess.run(v)
    sess.run(inc)
    assert sess.run(v).tolist() == [2.0, 3.0]
    assert sess.run(dec).tolist() == [1.5, 2.5]
    assert before.tolist() == [1.0, 2.0]           # fetched values never change afterwards


def test_variables_are_per_session():
    v = tf.Variable(1.0)
    s1, s2 = tf.Session(), tf.Session()
    s1.run(v.initializer)
    s1.run(v.assign(5.0))
    s2.run(v.initializer)
    assert (s1.run(v), s2.run(v)) == (5.0, 1.0)


def test_uninitialized_variable_fails_with_tf_message():
    v = tf.Variable(1.0, name="a")
    with pytest.raises(tf.errors.FailedPreconditionError) as e:
        tf.Session().run(v)
    assert "Attempting to use uninitialized value a" in str(e.value)
    assert "Hint: run sess.run(tf.global_variables_initializer())" in str(e.value)


def test_concurrent_assign_adds_lose_no_increment():
    """Threads bumping one counter through one session, switching threads every
    microsecond: every increment counts (each AssignAdd is one read-modify-write)."""
    import sys
    import threading

    step = tf.Variable(0, dtype=tf.int64, name="step")
    inc, dec = tf.assign_add(step, 1), tf.assign_sub(step, 1)
    sess = tf.Session()
    sess.run(step.initializer)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=lambda op=op: [sess.run(op) for _ in range(300)])
                   for op in (inc, inc, inc, dec)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert sess.run(step) == 3 * 300 - 300
