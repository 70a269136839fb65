"""Partitioned variables: partitioners, ``get_variable(..., partitioner=...)``, the parts'
names, slices and devices, and the PartitionedVariable used as a tensor (tfteach alone; the
comparison with TensorFlow is in tests/conformance/test_partitioned_variables_tf.py)."""
from __future__ import annotations

import numpy as np
import pytest

import tfteach as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_fixed_size_partitioner_splits_one_axis_and_never_more_than_its_length():
    assert tf.fixed_size_partitioner(3)(shape=tf.TensorShape([10, 4]), dtype=tf.float32) == [3, 1]
    assert tf.fixed_size_partitioner(8, axis=1)(shape=tf.TensorShape([10, 4]),
                                                dtype=tf.float32) == [1, 4]


def test_min_max_and_axis_size_partitioners_count_bytes():
    shape = tf.TensorShape([130, 3])       # 1560 bytes of float32, 12 per row
    assert tf.min_max_variable_partitioner(4, min_slice_size=64)(shape, tf.float32) == [4, 1]
    assert tf.min_max_variable_partitioner(40, min_slice_size=1000)(shape, tf.float32) == [2, 1]
    assert tf.variable_axis_size_partitioner(200)(shape, tf.float32) == [9, 1]   # 16 rows each
    assert tf.variable_axis_size_partitioner(200, max_shards=5)(shape, tf.float32) == [5, 1]
    with pytest.raises(ValueError, match="must be positive"):
        tf.variable_axis_size_partitioner(0)


def test_get_variable_with_a_partitioner_makes_parts_with_their_slices():
    v = tf.get_variable("emb", [130, 3], partitioner=tf.fixed_size_partitioner(3))
    parts = list(v)
    assert [p.op.name for p in parts] == ["emb/part_0", "emb/part_1", "emb/part_2"]
    assert [p.shape.as_list() for p in parts] == [[44, 3], [43, 3], [43, 3]]
    assert [p._save_slice_info.spec for p in parts] == \
        ["130 3 0,44:0,3", "130 3 44,43:0,3", "130 3 87,43:0,3"]
    assert v.get_shape().as_list() == [130, 3] and len(v) == 3
    assert tf.global_variables() == parts and tf.trainable_variables() == parts


def test_the_scope_partitioner_applies_and_reuse_returns_the_same_variable():
    with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(2)):
        w = tf.get_variable("w", [4, 6])
    with tf.variable_scope("s", reuse=True):
        again = tf.get_variable("w", [4, 6], partitioner=tf.fixed_size_partitioner(2))
    assert again is w and [p.op.name for p in w] == ["s/w/part_0", "s/w/part_1"]
    with pytest.raises(ValueError, match="already exists"):
        with tf.variable_scope("s"):
            tf.get_variable("w", [4, 6], partitioner=tf.fixed_size_partitioner(2))
    with pytest.raises(ValueError, match="specified partitions \\[3, 1\\]"):
        with tf.variable_scope("s", reuse=True):
            tf.get_variable("w", [4, 6], partitioner=tf.fixed_size_partitioner(3))


def test_partitioning_two_axes_or_an_unknown_shape_is_a_value_error():
    with pytest.raises(ValueError, match="Can only slice a variable along one dimension"):
        tf.get_variable("a", [4, 6], partitioner=lambda shape, dtype: [2, 2])
    with pytest.raises(ValueError, match="must be fully defined"):
        tf.get_variable("b", [None, 6], partitioner=tf.fixed_size_partitioner(2))


def test_replica_device_setter_spreads_the_parts_over_the_ps_tasks():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        v = tf.get_variable("emb", [10, 2], partitioner=tf.fixed_size_partitioner(3))
    assert [p.device for p in v] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


def test_the_variable_converts_to_the_concatenated_parts_in_matmul_and_lookups():
    full = np.arange(30, dtype=np.float32).reshape(10, 3)
    v = tf.get_variable("emb", [10, 3], partitioner=tf.fixed_size_partitioner(3),
                        initializer=tf.constant_initializer(0.0))
    whole = v.as_tensor()
    assert whole.op.name == "emb" and whole.op.inputs[0].op.type == "ConcatV2"
    product = tf.matmul(tf.ones([1, 10]), v)
    rows = tf.nn.embedding_lookup(v, [9, 0, 4], partition_strategy="div")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(v.assign(full))
        assert np.array_equal(sess.run(whole), full)
        assert np.array_equal(sess.run(product), full.sum(0, keepdims=True))
        assert np.array_equal(sess.run(rows), full[[9, 0, 4]])


def test_a_tensor_initializer_is_sliced_and_training_updates_every_part():
    start = np.arange(8, dtype=np.float32).reshape(4, 2)
    v = tf.get_variable("w", initializer=tf.constant(start),
                        partitioner=tf.fixed_size_partitioner(2))
    loss = tf.reduce_sum(tf.matmul(tf.ones([1, 4]), v))
    step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert np.array_equal(sess.run(v.as_tensor()), start)
        sess.run(step)
        assert np.array_equal(sess.run(v.as_tensor()), start - 0.5)
