"""Conformance: partitioned variables as TensorFlow makes, places and saves them.

The partitioners' answers, the parts' names, shapes, slice specs and ps devices, and the
tensor a PartitionedVariable converts to are compared with TF's compat.v1; checkpoints go
both ways, with another number of parts on the restoring side (TF's checkpoints name the
slices by OrderedCode keys; offsets past 64 and 8192 take longer codes)."""
from __future__ import annotations

import os

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

ROWS = 20000               # offsets 6667 and 13334: two- and three-byte slice keys
FULL = np.arange(ROWS * 2, dtype=np.float32).reshape(ROWS, 2)
BOTH = [tfteach, tf1]


@pytest.fixture(autouse=True)
def fresh_graphs():
    tf1.reset_default_graph()
    tfteach.reset_default_graph()


def _partitioner_answers(tf) -> list:
    shapes = [([130, 3], tf.float32), ([7, 1000], tf.float64), ([5], tf.int32),
              ([64, 64, 3], tf.float16)]
    makers = [lambda: tf.fixed_size_partitioner(4), lambda: tf.fixed_size_partitioner(9, 1),
              lambda: tf.min_max_variable_partitioner(8, min_slice_size=256),
              lambda: tf.min_max_variable_partitioner(3, axis=1, min_slice_size=100),
              lambda: tf.variable_axis_size_partitioner(200),
              lambda: tf.variable_axis_size_partitioner(1000, max_shards=3)]
    out = []
    for make in makers:
        for dims, dtype in shapes:
            try:
                out.append(list(make()(shape=tf.TensorShape(dims), dtype=dtype)))
            except (ValueError, IndexError) as err:
                out.append(type(err).__name__)
    return out


def test_the_partitioners_answer_as_tensorflow_does():
    assert _partitioner_answers(tfteach) == _partitioner_answers(tf1)


def _structure(tf) -> dict:
    with tf.device(tf.train.replica_device_setter(ps_tasks=3)):
        emb = tf.get_variable("emb", [130, 3], partitioner=tf.fixed_size_partitioner(4))
        with tf.variable_scope("layer", partitioner=tf.variable_axis_size_partitioner(64)):
            w = tf.get_variable("w", [5, 7])
    whole = emb.as_tensor()
    return {"parts": [(p.op.name, p.shape.as_list(), p._save_slice_info.spec, p.device)
                      for v in (emb, w) for p in v],
            "whole": (whole.op.name, whole.op.type, whole.op.inputs[0].op.name),
            "globals": [v.op.name for v in tf.global_variables()],
            "name": (emb.name, w.name, emb.get_shape().as_list(), len(w))}


def test_parts_are_named_sliced_and_placed_as_tensorflow_does():
    assert _structure(tfteach) == _structure(tf1)


def _save(tf, directory: str, parts: int) -> str:
    v = tf.get_variable("big", [ROWS, 2], partitioner=tf.fixed_size_partitioner(parts),
                        initializer=tf.zeros_initializer())
    b = tf.get_variable("b", initializer=tf.constant([1.0, 2.0]))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(v.assign(FULL))
        sess.run(b.assign([3.0, 4.0]))
        return saver.save(sess, os.path.join(directory, "model"))


def _restore(tf, prefix: str, parts: int) -> tuple:
    v = tf.get_variable("big", [ROWS, 2], partitioner=tf.fixed_size_partitioner(parts),
                        initializer=tf.zeros_initializer())
    b = tf.get_variable("b", initializer=tf.constant([0.0, 0.0]))
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)
        return sess.run(v.as_tensor()), sess.run(b)


@pytest.mark.parametrize("writer, reader", [(tfteach, tf1), (tf1, tfteach)],
                         ids=["tfteach-to-tf", "tf-to-tfteach"])
def test_a_partitioned_checkpoint_restores_on_the_other_runtime(tmp_path, writer, reader):
    prefix = _save(writer, str(tmp_path), 3)
    assert sorted(tfteach.train.list_variables(prefix)) == \
        sorted((n, s) for n, s in tf1.train.list_variables(prefix))
    restored, b = _restore(reader, prefix, 2)
    assert np.array_equal(restored, FULL) and list(b) == [3.0, 4.0]
