"""Sparse gradients: tf.gather's IndexedSlices, how several combine, how they densify, and
the ops that use them (Unique, UnsortedSegmentSum, DynamicStitch, Scatter*, SparseApply*)."""
import numpy as np
import pytest

import tfteach as tf

TABLE = np.arange(12, dtype=np.float32).reshape(4, 3)


def _run(fetches, init=True):
    sess = tf.Session()
    if init:
        sess.run(tf.global_variables_initializer())
    return sess.run(fetches)


def test_gather_gradient_is_indexed_slices_of_the_gathered_rows():
    w = tf.Variable(TABLE, name="w")
    grad = tf.gradients(tf.reduce_sum(tf.gather(w, [2, 0, 2]) * 2.0), w)[0]
    assert isinstance(grad, tf.IndexedSlices)
    got = _run(grad)
    assert got.indices.tolist() == [2, 0, 2]
    assert got.values.tolist() == [[2.0] * 3] * 3
    assert got.dense_shape.tolist() == [4, 3]


def test_two_gathers_concatenate_their_slices_in_the_order_tf_visits_them():
    w = tf.Variable(TABLE, name="w")
    first, second = tf.gather(w, [2, 0]), tf.gather(w, [1, 3])
    forward = tf.gradients(tf.reduce_sum(first) + tf.reduce_sum(second), w)[0]
    backward = tf.gradients(tf.reduce_sum(second) + tf.reduce_sum(first), w)[0]
    got = _run([forward, backward])
    assert got[0].indices.tolist() == [2, 0, 1, 3]
    assert got[1].indices.tolist() == [1, 3, 2, 0]


def test_a_dense_and_a_sparse_gradient_sum_into_a_dense_tensor():
    w = tf.Variable(TABLE, name="w")
    grad = tf.gradients(tf.reduce_sum(tf.gather(w, [2, 2])) + tf.reduce_sum(w), w)[0]
    assert isinstance(grad, tf.Tensor)
    np.testing.assert_array_equal(_run(grad), [[1] * 3, [1] * 3, [3] * 3, [1] * 3])


def test_convert_to_tensor_adds_repeated_rows_up():
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([1, 1]),
                              tf.constant([3, 2]))
    dense = tf.convert_to_tensor(slices)
    assert dense.shape.as_list() == [3, 2]
    assert _run(dense, init=False).tolist() == [[0, 0], [4, 6], [0, 0]]


def test_convert_without_dense_shape_is_a_value_error():
    slices = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([0]))
    with pytest.raises(ValueError, match="Tensor conversion requested for IndexedSlices for "
                                         "argument `value` without dense_shape"):
        tf.convert_to_tensor(slices)


def test_an_op_given_an_indexed_slices_gets_its_dense_sum():
    w = tf.Variable(TABLE, name="w")
    rows = tf.gather(tf.matmul(w, tf.ones([3, 3])), [0, 0])    # params computed, not a variable
    grad = tf.gradients(tf.reduce_sum(rows), w)[0]
    assert isinstance(grad, tf.Tensor)
    assert _run(grad).tolist() == [[6, 6, 6], [0, 0, 0], [0, 0, 0], [0, 0, 0]]


def test_session_run_returns_an_indexed_slices_value_inside_structures():
    slices = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([2]))
    got = _run({"g": [slices]}, init=False)["g"][0]
    assert (got.values.tolist(), got.indices.tolist(), got.dense_shape) == ([[1.0]], [2], None)


def test_gather_with_an_index_out_of_range_is_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"indices\[1\] = 7 is not in \[0, 4\)"):
        _run(tf.gather(tf.constant(TABLE), [1, 7]), init=False)


def test_unique_keeps_the_order_of_first_appearance():
    y, idx = tf.unique(tf.constant([5, 2, 5, 7, 2]))
    got = _run([y, idx], init=False)
    assert [v.tolist() for v in got] == [[5, 2, 7], [0, 1, 0, 2, 1]]


def test_unsorted_segment_sum_drops_negative_ids():
    out = tf.unsorted_segment_sum(tf.constant([1.0, 2.0, 4.0]), tf.constant([1, -1, 1]), 3)
    assert _run(out, init=False).tolist() == [0.0, 5.0, 0.0]


def test_scatter_sub_adds_repeated_indices_up():
    w = tf.Variable(tf.zeros([3, 2]), name="w")
    update = tf.scatter_sub(w, [1, 1, 0], tf.ones([3, 2]))
    assert _run(update).tolist() == [[-1, -1], [-2, -2], [0, 0]]


def test_a_bad_scatter_index_changes_nothing():
    w = tf.Variable(tf.zeros([3]), name="w")
    sess = tf.Session()
    sess.run(w.initializer)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 3 is not in"):
        sess.run(tf.scatter_add(w, [0, 3], [1.0, 1.0]))
    assert sess.run(w).tolist() == [0, 0, 0]


def test_sparse_apply_runs_repeated_indices_one_after_the_other():
    from tfteach.ops.scatter_ops import apply_sparse_update
    w = tf.Variable(tf.zeros([2]), name="w")
    acc = tf.Variable(tf.ones([2]), name="acc")
    step = apply_sparse_update("SparseApplyAdagrad", [w, acc], [0.1, tf.ones([2])], [1, 1])
    got = _run(step)
    np.testing.assert_allclose(got, [0, -0.1 / np.sqrt(2) - 0.1 / np.sqrt(3)], rtol=1e-6)


def test_a_sparse_update_leaves_the_other_rows_and_their_slots_alone():
    w = tf.Variable(TABLE, name="w")
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    train = opt.minimize(tf.reduce_sum(tf.gather(w, [1])))
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    sess.run(train)
    got, mom = sess.run([w, opt.get_slot(w, "momentum")])
    np.testing.assert_allclose(got[[0, 2, 3]], TABLE[[0, 2, 3]])
    np.testing.assert_allclose(got[1], TABLE[1] - 0.1)
    assert mom.tolist() == [[0] * 3, [1] * 3, [0] * 3, [0] * 3]


def test_gate_graph_gates_the_values_of_an_indexed_slices():
    w = tf.Variable(TABLE, name="w")
    opt = tf.train.GradientDescentOptimizer(0.1)
    (grad, _), = opt.compute_gradients(tf.reduce_sum(tf.gather(w, [0])),
                                       gate_gradients=opt.GATE_GRAPH)
    assert isinstance(grad, tf.IndexedSlices)
    assert grad.values.op.type == "Identity" and grad.values.op.control_inputs


def test_embedding_lookup_over_two_tables_splits_ids_by_strategy():
    a = tf.constant([[0.0], [2.0], [4.0]])          # 'mod': ids 0, 2, 4
    b = tf.constant([[1.0], [3.0]])                 #        ids 1, 3
    ids = tf.constant([[4, 1], [0, 3]])
    mod = tf.nn.embedding_lookup([a, b], ids)
    div = tf.nn.embedding_lookup([a, b], ids, partition_strategy="div")   # 0-2 in a, 3-4 in b
    got = _run([mod, div], init=False)
    assert got[0].reshape(2, 2).tolist() == [[4, 1], [0, 3]]
    assert got[1].reshape(2, 2).tolist() == [[3, 2], [0, 1]]
    assert mod.shape.as_list() == [2, 2, 1]
