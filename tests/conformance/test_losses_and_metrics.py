"""``tf.losses`` and ``tf.metrics`` against TensorFlow's compat.v1: every loss with scalar,
per-example and zero weights under each reduction, the loss's name and the LOSSES
collection, gradients, ``get_total_loss`` with regularization losses, and the streaming
``accuracy``/``mean`` metrics (local variables, update ops, values across batches).

Runs only where TensorFlow is installed; otherwise the whole module skips.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach

RNG = np.random.default_rng(3)
LOGITS = RNG.normal(size=(4, 3)).astype(np.float32) * 2
ONEHOT = np.eye(3, dtype=np.float32)[[0, 2, 1, 2]]
SPARSE = np.array([0, 2, 1, 2], np.int32)
PROBS = np.array([[0.1, 0.9, 0.5], [0.99, 0.01, 0.3], [0.5, 0.5, 0.7], [0.2, 0.6, 0.0]],
                 np.float32)
BINARY = (RNG.uniform(size=(4, 3)) > 0.5).astype(np.float32)
ROW_WEIGHTS = np.array([[1.0], [0.0], [2.0], [0.5]], np.float32)

LOSSES = {
    "mean_squared_error": lambda tf, x, w, r: tf.losses.mean_squared_error(
        BINARY, x, weights=w, reduction=r),
    "absolute_difference": lambda tf, x, w, r: tf.losses.absolute_difference(
        BINARY, x, weights=w, reduction=r),
    "log_loss": lambda tf, x, w, r: tf.losses.log_loss(
        BINARY, tf.sigmoid(x), weights=w, reduction=r),
    "huber_loss": lambda tf, x, w, r: tf.losses.huber_loss(
        BINARY, x, weights=w, delta=0.7, reduction=r),
    "hinge_loss": lambda tf, x, w, r: tf.losses.hinge_loss(BINARY, x, weights=w, reduction=r),
    "sigmoid_cross_entropy": lambda tf, x, w, r: tf.losses.sigmoid_cross_entropy(
        BINARY, x, weights=w, label_smoothing=0.1, reduction=r),
    "softmax_cross_entropy": lambda tf, x, w, r: tf.losses.softmax_cross_entropy(
        ONEHOT, x, weights=w[:, 0] if np.ndim(w) else w, label_smoothing=0.2, reduction=r),
    "sparse_softmax_cross_entropy": lambda tf, x, w, r: tf.losses.sparse_softmax_cross_entropy(
        SPARSE, x, weights=w[:, 0] if np.ndim(w) else w, reduction=r),
}
REDUCTIONS = ["SUM_BY_NONZERO_WEIGHTS", "MEAN", "SUM", "NONE", "SUM_OVER_BATCH_SIZE"]


def run_loss(tf, build, weights, reduction):
    with tf.Graph().as_default():
        x = tf.constant(LOGITS, name="x")
        loss = build(tf, x, weights, getattr(tf.losses.Reduction, reduction))
        collected = [t.name for t in tf.get_collection(tf.GraphKeys.LOSSES)]
        grad = tf.gradients(tf.reduce_sum(loss), x)[0]
        with tf.Session() as sess:
            value, g = sess.run([loss, grad])
        return value, g, loss.name, loss.op.type, collected


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_match_tensorflow(name, reduction):
    for weights in (1.0, ROW_WEIGHTS):
        ours, theirs = (run_loss(tf, LOSSES[name], weights, reduction) for tf in (tfteach, tf1))
        np.testing.assert_allclose(ours[0], theirs[0], rtol=3e-6, atol=1e-6)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=3e-6, atol=1e-6)
        assert ours[3] == theirs[3]                         # the loss's op type
        if name != "hinge_loss":    # TF uniquifies "mul" and "Mul" as one name, tfteach not
            assert (ours[2], ours[4]) == (theirs[2], theirs[4])     # its name, LOSSES


def test_all_zero_weights_give_a_zero_loss_and_gradient():
    for tf in (tfteach, tf1):
        value, grad, *_ = run_loss(tf, LOSSES["mean_squared_error"], np.zeros((4, 1), np.float32),
                                   "SUM_BY_NONZERO_WEIGHTS")
        assert value == 0.0 and not np.any(grad)


def test_total_loss_adds_regularization_losses():
    results = []
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            w = tf.Variable(LOGITS, name="w")
            tf.losses.mean_squared_error(BINARY, w)
            tf.losses.add_loss(tf.reduce_sum(w) * 0.5)
            tf.add_to_collection(tf.GraphKeys.REGULARIZATION_LOSSES, tf.nn.l2_loss(w) * 0.01)
            total = tf.losses.get_total_loss()
            without = tf.losses.get_total_loss(add_regularization_losses=False, name="plain")
            counts = (len(tf.losses.get_losses()), len(tf.losses.get_regularization_losses()))
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                results.append((sess.run([total, without]), total.name, total.op.type, counts))
    (ours, *our_facts), (theirs, *their_facts) = results
    np.testing.assert_allclose(ours, theirs, rtol=2e-6)
    assert our_facts == their_facts


def test_an_unknown_reduction_is_refused():
    for tf in (tfteach, tf1):
        with tf.Graph().as_default(), pytest.raises(ValueError, match="Invalid Reduction Key"):
            tf.losses.mean_squared_error(BINARY, LOGITS, reduction="average")


def run_metrics(tf):
    with tf.Graph().as_default():
        labels = tf.placeholder(tf.int64, [None])
        predictions = tf.placeholder(tf.int64, [None])
        weights = tf.placeholder(tf.float32, [None])
        acc, acc_update = tf.metrics.accuracy(labels, predictions)
        wacc, wacc_update = tf.metrics.accuracy(labels, predictions, weights=weights,
                                                name="weighted")
        mean, mean_update = tf.metrics.mean(tf.cast(predictions, tf.float32) * 1.5)
        local = sorted(v.name for v in tf.local_variables())
        metric = sorted(v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES))
        names = [t.name for t in (acc, acc_update, wacc, wacc_update, mean, mean_update)]
        seen = []
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            seen.append(sess.run([acc, wacc, mean]))       # before any update: 0, not NaN
            for lab, pred, w in (([1, 2, 3], [1, 0, 3], [1, 1, 0]), ([4], [4], [2.0])):
                feed = {labels: lab, predictions: pred, weights: w}
                seen.append(sess.run([acc_update, wacc_update, mean_update], feed))
                seen.append(sess.run([acc, wacc, mean]))
            sess.run(tf.local_variables_initializer())
            seen.append(sess.run([acc, wacc, mean]))
        return seen, local, metric, names, sorted(v.name for v in tf.trainable_variables())


def test_metrics_match_tensorflow():
    ours, theirs = run_metrics(tfteach), run_metrics(tf1)
    np.testing.assert_allclose(np.array(ours[0]), np.array(theirs[0]), rtol=1e-6)
    assert ours[1:] == theirs[1:]
    assert ours[0][3] == pytest.approx([0.75, 4 / 3 * 0 + (1 + 2) / 4, 1.5 * 8 / 4])
