"""Conformance of sparse gradients: the same programs on tfteach and TensorFlow compat.v1.

tf.gather / tf.nn.embedding_lookup gradients (IndexedSlices or dense, their values, indices
and dense_shape, how several combine), the optimizers' sparse updates on a small embedding
model, SparseConditionalAccumulator and SyncReplicasOptimizer with an embedding.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

TABLE = np.arange(20, dtype=np.float32).reshape(5, 4) / 10


@pytest.fixture(autouse=True)
def fresh_graphs(monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    tf1.reset_default_graph()
    tfteach.reset_default_graph()


def run_both(program, init: bool = True) -> list:
    """``program(tf)`` on both runtimes: [(what it built, what fetching it gave), ...]."""
    out = []
    for tf in (tfteach, tf1):
        built = program(tf)
        with tf.Session() as sess:
            if init:
                sess.run(tf.global_variables_initializer())
            out.append((built, sess.run(built)))
    return out


def assert_same_gradient(ours, theirs) -> None:
    """Both dense, or both IndexedSlices with equal values, indices and dense_shape."""
    (our_t, our_v), (their_t, their_v) = ours, theirs
    assert isinstance(our_t, tfteach.IndexedSlices) == isinstance(their_t, tf1.IndexedSlices)
    if isinstance(their_t, tf1.IndexedSlices):
        np.testing.assert_allclose(our_v.values, their_v.values, rtol=1e-6)
        assert our_v.indices.tolist() == their_v.indices.tolist()
        assert our_v.indices.dtype == their_v.indices.dtype
        assert our_v.dense_shape.tolist() == their_v.dense_shape.tolist()
    else:
        np.testing.assert_allclose(our_v, their_v, rtol=1e-6)


# ---- gradients -------------------------------------------------------------------------------
def _params(tf):
    return tf.Variable(TABLE, name="w")


GRADIENT_PROGRAMS = {
    "gather": lambda tf, w: tf.reduce_sum(tf.gather(w, [3, 0, 3]) * 2.0),
    "gather-2d-indices": lambda tf, w: tf.reduce_sum(tf.square(tf.gather(w, [[1, 1], [4, 2]]))),
    "gather-axis1": lambda tf, w: tf.reduce_sum(tf.square(tf.gather(w, [2, 0, 2], axis=1))),
    "embedding": lambda tf, w: tf.reduce_sum(tf.nn.embedding_lookup(w, [[4, 1], [1, 0]]) * 3.0),
    "two-lookups": lambda tf, w: (tf.reduce_sum(tf.gather(w, [2, 0])) +
                                  tf.reduce_sum(tf.square(tf.gather(w, [1, 3])))),
    "two-lookups-reversed": lambda tf, w: (tf.reduce_sum(tf.square(tf.gather(w, [1, 3]))) +
                                           tf.reduce_sum(tf.gather(w, [2, 0]))),
    "dense-and-sparse": lambda tf, w: tf.reduce_sum(tf.gather(w, [2, 2])) + tf.reduce_sum(w * w),
    "through-matmul": lambda tf, w: tf.reduce_sum(tf.gather(tf.matmul(w, tf.ones([4, 4])), [0])),
}


@pytest.mark.parametrize("name", list(GRADIENT_PROGRAMS))
def test_gradient_kind_and_value_match_tensorflow(name):
    def program(tf):
        w = _params(tf)
        return tf.gradients(GRADIENT_PROGRAMS[name](tf, w), w)[0]
    assert_same_gradient(*run_both(program))


@pytest.mark.parametrize("strategy", ["mod", "div"])
def test_partitioned_embedding_lookup_and_its_gradients_match_tensorflow(strategy):
    def program(tf):
        parts = [tf.Variable(TABLE[:3], name="part_0"), tf.Variable(TABLE[3:], name="part_1")]
        rows = tf.nn.embedding_lookup(parts, [[4, 1], [0, 3]], partition_strategy=strategy)
        return [rows] + tf.gradients(tf.reduce_sum(rows * rows), parts)
    ours, theirs = run_both(program)
    np.testing.assert_allclose(ours[1][0], theirs[1][0])
    for i in (1, 2):
        assert_same_gradient((ours[0][i], ours[1][i]), (theirs[0][i], theirs[1][i]))


def test_densified_indexed_slices_and_static_shapes_match_tensorflow():
    def program(tf):
        slices = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([2, 2]),
                                  tf.constant([3, 2]))
        no_shape = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([0]))
        return slices, no_shape, tf.convert_to_tensor(slices)
    (ours, our_vals), (theirs, their_vals) = run_both(program, init=False)
    assert [str(s.shape) for s in ours[:2]] == [str(s.shape) for s in theirs[:2]]
    assert ours[2].shape.as_list() == theirs[2].shape.as_list()
    np.testing.assert_array_equal(our_vals[2], their_vals[2])


def test_helper_ops_match_tensorflow():
    def program(tf):
        y, idx = tf.unique(tf.constant([5, 2, 5, 7, 2]))
        seg = tf.unsorted_segment_sum(tf.constant([[1.0], [2.0], [4.0]]), [1, -1, 1], 3)
        stitched = tf.dynamic_stitch([[0, 2], [1, 2]], [[1.0, 2.0], [3.0, 4.0]])
        return [y, idx, seg, stitched, tf.floormod(tf.constant([-7, 7]), 3)]
    (_, ours), (_, theirs) = run_both(program, init=False)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("program", [
    lambda tf: tf.gather(tf.constant(TABLE), [1, 7]),
    lambda tf: tf.unsorted_segment_sum(tf.constant([1.0, 2.0]), [0, 5], 4),
])
def test_index_errors_match_tensorflow(program):
    messages = []
    for tf in (tfteach, tf1):
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(program(tf))
        messages.append(info.value.message)
    assert messages[0].splitlines()[0] in messages[1]


# ---- training an embedding -------------------------------------------------------------------
OPTIMIZERS = {
    "GradientDescent": lambda tf: tf.train.GradientDescentOptimizer(0.5),
    "Momentum": lambda tf: tf.train.MomentumOptimizer(0.5, 0.9),
    "Nesterov": lambda tf: tf.train.MomentumOptimizer(0.5, 0.9, use_nesterov=True),
    "Adam": lambda tf: tf.train.AdamOptimizer(0.1),
    "Adagrad": lambda tf: tf.train.AdagradOptimizer(0.5),
    "RMSProp": lambda tf: tf.train.RMSPropOptimizer(0.1, momentum=0.5),
    "CenteredRMSProp": lambda tf: tf.train.RMSPropOptimizer(0.1, momentum=0.5, centered=True),
}
IDS = np.array([[1, 3, 3], [7, 1, 0], [2, 9, 9], [3, 3, 1]], np.int32)
LABELS = np.array([0, 1, 1, 0], np.int64)


def _embedding_model(tf, make_opt, partitioned: bool):
    init = np.linspace(-1, 1, 40, dtype=np.float32).reshape(10, 4)
    if partitioned:
        emb = [tf.Variable(init[0::2], name="emb_0"), tf.Variable(init[1::2], name="emb_1")]
    else:
        emb = tf.Variable(init, name="emb")
    w = tf.Variable(np.linspace(0.5, -0.5, 8, dtype=np.float32).reshape(4, 2), name="w")
    ids = tf.placeholder(tf.int32, [None, 3])
    labels = tf.placeholder(tf.int64, [None])
    features = tf.reduce_mean(tf.nn.embedding_lookup(emb, ids), axis=1)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=tf.matmul(features, w)))
    train = make_opt(tf).minimize(loss)
    variables = (emb if partitioned else [emb]) + [w]
    return train, loss, variables, {ids: IDS, labels: LABELS}


@pytest.mark.parametrize("partitioned", [False, True], ids=["one-table", "two-tables-mod"])
@pytest.mark.parametrize("opt", list(OPTIMIZERS))
def test_an_embedding_model_trains_like_tensorflow(opt, partitioned):
    results = []
    for tf in (tfteach, tf1):
        train, loss, variables, feed = _embedding_model(tf, OPTIMIZERS[opt], partitioned)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            losses = [sess.run([train, loss], feed)[1] for _ in range(5)]
            results.append((losses, sess.run(variables)))
    (our_losses, ours), (their_losses, theirs) = results
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-5)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


# ---- the sparse accumulator and sync replicas ------------------------------------------------
GRADIENTS = [([2, 0], [[1, 1], [2, 2]]), ([0, 3], [[3, 3], [4, 4]]), ([0, 2, 2], [[5, 5]] * 3)]


@pytest.mark.parametrize("shape", [(), [4, 2], None], ids=["scalar", "known", "unknown"])
@pytest.mark.parametrize("reduction", ["MEAN", "SUM"])
def test_sparse_accumulator_merges_and_averages_like_tensorflow(shape, reduction):
    def program(tf):
        acc = tf.SparseConditionalAccumulator(tf.float32, shape=shape, reduction_type=reduction)
        applies = [acc.apply_grad(np.array(i, np.int64), np.array(v, np.float32),
                                  local_step=0) for i, v in GRADIENTS]
        return acc, applies, acc.take_indexed_slices_grad(len(GRADIENTS))
    results = []
    for tf in (tfteach, tf1):
        _, applies, take = program(tf)
        with tf.Session() as sess:
            for a in applies:
                sess.run(a)
            results.append(sess.run(take))
    ours, theirs = results
    assert ours.indices.tolist() == theirs.indices.tolist()
    np.testing.assert_allclose(ours.values, theirs.values)
    assert ours.dense_shape.tolist() == theirs.dense_shape.tolist()


@pytest.mark.parametrize("indices, values, shape", [
    ([5], [[1, 1]], [4, 2]),
    ([1], [[1, 1]], [5, 2]),
    ([1], [[1, 1, 1]], None),
    ([1, 2], [[1, 1]], None),
    ([1], [[1, 1]], [4]),
])
def test_sparse_accumulator_shape_errors_match_tensorflow(indices, values, shape):
    messages = []
    for tf in (tfteach, tf1):
        acc = tf.SparseConditionalAccumulator(tf.float32, shape=[4, 2])
        apply = acc.apply_grad(np.array(indices, np.int64), np.array(values, np.float32),
                               grad_shape=shape, local_step=0)
        with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(apply)
        messages.append(info.value.message)
    assert messages[0].splitlines()[0] in messages[1]


FEEDS = [([1, 3], [[1], [1]]), ([3, 0], [[3], [5]]), ([2, 2], [[7], [7]]), ([0, 3], [[1], [1]]),
         ([2, 2], [[1], [2]])]


# TF's chief queue runner thread ends with TakeGrad's CancelledError when its session closes
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_sync_replicas_trains_an_embedding_like_tensorflow():
    """One process plays the chief; two runs of the train op make a global step. The third
    run's gradient is stale (its local step is still 0) and dropped; the next two make the
    second step."""
    results = []
    for tf in (tfteach, tf1):
        emb = tf.Variable(tf.zeros([4, 2]), name="emb")
        gs = tf.train.get_or_create_global_step()
        ids, weight = tf.placeholder(tf.int32, [2]), tf.placeholder(tf.float32, [2, 1])
        loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids) * weight)
        opt = tf.train.SyncReplicasOptimizer(tf.train.MomentumOptimizer(1.0, 0.5), 2)
        train = opt.minimize(loss, global_step=gs)
        hook = opt.make_session_run_hook(is_chief=True)
        with tf.train.MonitoredTrainingSession(hooks=[hook], stop_grace_period_secs=5) as sess:
            for run, (fed_ids, fed_weight) in enumerate(FEEDS):
                sess.run(train, {ids: fed_ids, weight: fed_weight})
                _wait_for_step(sess, gs, {0: 0, 1: 1, 2: 1, 3: 1, 4: 2}[run])
            results.append(sess.run(emb))
    np.testing.assert_allclose(results[0], results[1])


def _wait_for_step(sess, gs, step: int) -> None:
    for _ in range(200):
        if sess.run(gs) == step:
            return
        time.sleep(0.02)
    raise AssertionError(f"the chief did not reach global step {step}")
