"""tf.nn forward values against NumPy, numerical stability, dropout's seeding, and the
cross-entropies' argument checks and errors."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.errors import InvalidArgumentError

X = np.array([[1.0, -2.0, 3.0], [0.5, 0.0, -0.25]], dtype=np.float32)


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("fn, expected", [
    (tf.nn.relu, np.maximum(X, 0)),
    (tf.nn.relu6, np.clip(X * 3, 0, 6) / 1.0),
    (tf.nn.sigmoid, 1 / (1 + np.exp(-X))),
    (tf.nn.tanh, np.tanh(X)),
    (tf.nn.softplus, np.log1p(np.exp(X))),
    (tf.nn.softmax, _softmax(X)),
    (tf.nn.log_softmax, np.log(_softmax(X))),
    (lambda x: tf.nn.leaky_relu(x, alpha=0.1), np.where(X > 0, X, 0.1 * X)),
])
def test_activation_matches_numpy(fn, expected):
    arg = X * 3 if fn is tf.nn.relu6 else X
    out = _run(fn(tf.constant(arg)))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_activations_keep_their_tf_names():
    x = tf.constant(X)
    assert tf.nn.relu(x).op.name == "Relu"
    assert tf.sigmoid(x).op.type == "Sigmoid"
    assert tf.nn.softmax(x).op.name == "Softmax"


def test_softmax_along_another_axis():
    np.testing.assert_allclose(_run(tf.nn.softmax(tf.constant(X), axis=0)),
                               _softmax(X.T).T, rtol=1e-6)


def test_sigmoid_and_softmax_are_finite_at_huge_inputs():
    big = tf.constant([[1e4, -1e4, 0.0]])
    sig, soft, logsoft = _run([tf.nn.sigmoid(big), tf.nn.softmax(big), tf.nn.log_softmax(big)])
    np.testing.assert_allclose(sig, [[1.0, 0.0, 0.5]])
    np.testing.assert_allclose(soft, [[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(logsoft, [[0.0, -2e4, -1e4]])


def test_bias_add_adds_along_the_channel_axis():
    v = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    b = np.array([10.0, 20.0, 30.0], np.float32)
    nchw = _run(tf.nn.bias_add(tf.constant(v), tf.constant(b), data_format="NCHW"))
    np.testing.assert_allclose(nchw, v + b.reshape(3, 1))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.nn.bias_add(tf.constant(v), tf.constant(b))


def test_l2_loss_is_half_the_sum_of_squares():
    assert _run(tf.nn.l2_loss(tf.constant(X))) == pytest.approx(0.5 * float((X ** 2).sum()))


def test_xw_plus_b():
    w = np.ones((3, 2), np.float32)
    out = tf.nn.xw_plus_b(tf.constant(X), tf.constant(w), tf.constant([1.0, 2.0]))
    assert out.op.name == "xw_plus_b"
    np.testing.assert_allclose(_run(out), X @ w + [1.0, 2.0])


def test_softmax_cross_entropy_matches_numpy_and_is_stable():
    logits = np.array([[2.0, 1.0, 0.1], [1e4, 0.0, -1e4]], np.float32)
    labels = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]], np.float32)
    cost = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    got = _run(cost)
    assert np.isfinite(got).all()
    assert got[0] == pytest.approx(-np.log(_softmax(logits[:1])[0, 0]), rel=1e-6)
    assert got[1] == pytest.approx(0.5 * 1e4 + 0.5 * 2e4, rel=1e-6)


def test_v1_cross_entropy_sends_no_gradient_to_labels_but_v2_does():
    logits = tf.constant([[2.0, 1.0]])
    labels = tf.Variable([[0.3, 0.7]])
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert tf.gradients(v1, labels) == [None]
    (g,) = tf.gradients(v2, labels)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(g), -np.log(_softmax(np.array([[2.0, 1.0]]))),
                                   rtol=1e-6)


def test_cross_entropy_of_higher_rank_logits_keeps_the_leading_shape():
    logits = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
    labels = _softmax(np.random.RandomState(1).randn(2, 3, 4)).astype(np.float32)
    cost = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    expected = -(labels * np.log(_softmax(logits))).sum(-1)
    np.testing.assert_allclose(_run(cost), expected, rtol=1e-5)


def test_sparse_cross_entropy_matches_dense_with_one_hot_labels():
    logits = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    labels = np.array([0, 4, 2, 2])
    sparse = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    dense = tf.nn.softmax_cross_entropy_with_logits_v2(labels=np.eye(5, dtype=np.float32)[labels],
                                                       logits=logits)
    a, b = _run([sparse, dense])
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert sparse.op.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"


def test_sparse_cross_entropy_rejects_a_label_out_of_range():
    labels = tf.placeholder(tf.int64, [None])
    cost = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                          logits=tf.constant(X))
    with pytest.raises(InvalidArgumentError, match=r"label value of 3 which is outside the "
                                                   r"valid range of \[0, 3\)[\s\S]*Hint:"):
        _run(cost, {labels: [0, 3]})


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_sparse_cross_entropy_rejects_a_negative_label(dtype):
    labels = tf.placeholder(dtype, [None])
    cost = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                          logits=tf.constant(X))
    with pytest.raises(InvalidArgumentError, match=r"label value of -1 which is outside"):
        _run(cost, {labels: [0, -1]})
    np.testing.assert_array_equal(_run(cost, {labels: [2, 0]}).shape, [2])


def test_cross_entropies_need_named_arguments():
    with pytest.raises(ValueError, match="Only call `softmax_cross_entropy_with_logits` with "
                                         "named arguments"):
        tf.nn.softmax_cross_entropy_with_logits(X, X)
    with pytest.raises(ValueError, match="Rank mismatch"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[1]], logits=X)
    with pytest.raises(TypeError, match="labels must be int32 or int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1.0, 2.0], logits=X)


def _dropout_values(seed_graph, seed_op, keep=0.5):
    tf.reset_default_graph()
    tf.set_random_seed(seed_graph)
    out = tf.nn.dropout(tf.ones([1000]), keep_prob=keep, seed=seed_op)
    with tf.Session() as sess:
        return sess.run(out), sess.run(out)


def test_dropout_keeps_about_keep_prob_and_scales_by_its_inverse():
    first, second = _dropout_values(1, 2, keep=0.25)
    assert set(np.unique(first)) <= {0.0, 4.0}
    assert 0.2 < (first > 0).mean() < 0.3
    assert not np.array_equal(first, second)


def test_dropout_with_the_same_seeds_repeats_across_sessions():
    a = _dropout_values(1, 2)
    b = _dropout_values(1, 2)
    c = _dropout_values(1, 3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_dropout_argument_checks_and_keep_prob_one():
    x = tf.constant(X)
    assert tf.nn.dropout(x, keep_prob=1.0) is x
    with pytest.raises(ValueError, match=r"keep_prob must be a scalar tensor or a float in the "
                                         r"range \(0, 1\], got 1.5"):
        tf.nn.dropout(x, keep_prob=1.5)
    np.testing.assert_allclose(_run(tf.nn.dropout(x, rate=0.0)), X)


def test_one_hot_labels_feed_the_dense_cross_entropy():
    labels = tf.placeholder(tf.int64, [None])
    hot = tf.one_hot(labels, 4)
    assert hot.shape.as_list() == [None, 4] and hot.dtype == tf.float32
    np.testing.assert_array_equal(_run(hot, {labels: [2, 0]}), [[0, 0, 1, 0], [1, 0, 0, 0]])
    signs = tf.one_hot([1], 3, on_value=5, off_value=-1, dtype=tf.int32)
    np.testing.assert_array_equal(_run(signs), [[-1, 5, -1]])


def test_clip_by_value_clips_and_passes_gradients_inside_the_range():
    x = tf.constant([-2.0, 0.5, 3.0])
    y = tf.clip_by_value(x, 0.0, 1.0)
    (g,) = tf.gradients(tf.reduce_sum(y), x)
    got_y, got_g = _run([y, g])
    np.testing.assert_allclose(got_y, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(got_g, [0.0, 1.0, 0.0])
    assert y.op.name == "clip_by_value"


def test_a_row_far_below_the_others_keeps_its_own_softmax_and_a_nan_row_stays_alone():
    """On the CPU the softmaxes first shift by the whole tensor's max; a row that would
    underflow (or a NaN row) makes every row use its own max, as TF's kernels do."""
    logits = np.array([[1.0, 2.0, 3.0], [-500.0, -501.0, -499.0]], np.float32)
    labels = np.array([2, 0], np.int64)
    soft, logsoft, sparse = _run([
        tf.nn.softmax(tf.constant(logits)), tf.nn.log_softmax(tf.constant(logits)),
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)])
    want = _softmax(logits.astype(np.float64))
    np.testing.assert_allclose(soft, want, rtol=1e-5)
    np.testing.assert_allclose(logsoft, np.log(want), rtol=1e-5)
    np.testing.assert_allclose(sparse, -np.log(want[[0, 1], labels]), rtol=1e-5)
    with_nan = np.array([[np.nan, 0.0, 1.0], [1.0, 2.0, 3.0]], np.float32)
    got = _run(tf.nn.softmax(tf.constant(with_nan)))
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1], _softmax(with_nan[1:])[0], rtol=1e-6)
