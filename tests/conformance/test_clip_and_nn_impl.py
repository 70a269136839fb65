"""Clipping (``tf.clip_by_norm``, ``global_norm``, ``clip_by_global_norm``,
``clip_by_average_norm``), ``tf.nn`` composites (``l2_normalize``, sigmoid and weighted
cross-entropies), ``elu``, ``selu`` and ``div_no_nan`` against TensorFlow's compat.v1: values, gradients, names and
op types of the results, ``None`` entries and ``IndexedSlices``.

Runs only where TensorFlow is installed; otherwise the whole module skips.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach

RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 4)).astype(np.float32) * 3
B = RNG.normal(size=(5,)).astype(np.float32)
LOGITS = np.array([[-30.0, -1.5, 0.0], [0.5, 2.0, 40.0]], np.float32)
LABELS = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 1.0]], np.float32)

BUILDS = {
    "clip_by_norm": lambda tf, a, b: [tf.clip_by_norm(a, 2.0)],
    "clip_by_norm_axes": lambda tf, a, b: [tf.clip_by_norm(a, 1.5, axes=[1])],
    "clip_by_norm_zero": lambda tf, a, b: [tf.clip_by_norm(a * 0.0, 1.0)],
    "global_norm": lambda tf, a, b: [tf.global_norm([a, None, b])],
    "clip_by_global_norm": lambda tf, a, b: (lambda r: r[0] + [r[1]])(
        tf.clip_by_global_norm([a, b], 1.0)),
    "clip_by_global_norm_unclipped": lambda tf, a, b: (lambda r: r[0] + [r[1]])(
        tf.clip_by_global_norm([a, b], 100.0)),
    "clip_by_average_norm": lambda tf, a, b: [tf.clip_by_average_norm(a, 0.1)],
    "l2_normalize": lambda tf, a, b: [tf.nn.l2_normalize(a, axis=1)],
    "l2_normalize_dim": lambda tf, a, b: [tf.nn.l2_normalize(a, dim=0, epsilon=1e-3)],
    "sigmoid_xent": lambda tf, a, b: [tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.constant(LABELS), logits=a[:2, :3] * 10 + tf.constant(LOGITS))],
    "weighted_xent": lambda tf, a, b: [tf.nn.weighted_cross_entropy_with_logits(
        tf.constant(LABELS), a[:2, :3] + tf.constant(LOGITS), 2.5)],
    "weighted_xent_targets": lambda tf, a, b: [tf.nn.weighted_cross_entropy_with_logits(
        targets=tf.constant(LABELS), logits=a[:2, :3] - 1.0, pos_weight=0.5, name="w")],
    "moments": lambda tf, a, b: list(tf.nn.moments(a, axes=[0])),
    "moments_keep_dims": lambda tf, a, b: list(tf.nn.moments(a, [0, 1], keep_dims=True)),
    "moments_keepdims": lambda tf, a, b: list(tf.nn.moments(a, [1], keepdims=True)),
    "elu": lambda tf, a, b: [tf.nn.elu(a), tf.nn.elu(b, name="e")],
    "selu": lambda tf, a, b: [tf.nn.selu(a)],
    "div_no_nan": lambda tf, a, b: [tf.div_no_nan(a, tf.constant([0.0, 2.0, 0.0, -1.0]))],
}


def build_and_run(tf, build):
    """Results of ``build`` on ``tf``, their gradients w.r.t. both inputs, and names."""
    with tf.Graph().as_default():
        a, b = tf.constant(A, name="a"), tf.constant(B, name="b")
        outs = build(tf, a, b)
        loss = tf.add_n([tf.reduce_sum(o * o) for o in outs])
        grads = [g for g in tf.gradients(loss, [a, b]) if g is not None]
        with tf.Session() as sess:
            values = sess.run(outs + grads)
        return values, [(o.op.type, o.name) for o in outs]


@pytest.mark.parametrize("name", sorted(BUILDS))
def test_values_gradients_and_names_match_tensorflow(name):
    (ours, our_ops), (theirs, their_ops) = (build_and_run(tf, BUILDS[name])
                                            for tf in (tfteach, tf1))
    assert our_ops == their_ops
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
    assert all(np.all(np.isfinite(v)) for v in ours)


def test_clip_by_global_norm_keeps_none_and_indexed_slices():
    results = []
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            params = tf.Variable(A, name="params")
            dense = tf.constant(B)
            rows = tf.gather(params, [0, 2])
            sparse = tf.gradients(tf.reduce_sum(rows * 4.0), params)[0]
            assert isinstance(sparse, tf.IndexedSlices)
            clipped, norm = tf.clip_by_global_norm([sparse, None, dense], 3.0)
            assert clipped[1] is None and isinstance(clipped[0], tf.IndexedSlices)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                results.append(sess.run([clipped[0].values, clipped[0].indices, clipped[2],
                                         norm]))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_non_finite_global_norm_makes_every_value_nan():
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            clipped, norm = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
            with tf.Session() as sess:
                values, n = sess.run([clipped[0], norm])
        assert np.isinf(n) and np.all(np.isnan(values))


def test_sigmoid_cross_entropy_needs_matching_shapes():
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            with pytest.raises(ValueError, match="must have the same shape"):
                tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.zeros([2, 3]),
                                                        logits=tf.zeros([3, 2]))
            with pytest.raises(ValueError, match="must be provided"):
                tf.nn.sigmoid_cross_entropy_with_logits(tf.zeros([2]))
