"""Partitioned variables in checkpoints: saved in slices under the full name, as TF saves
them, and restored into any number of parts (or into one whole variable)."""
from __future__ import annotations

import numpy as np
import pytest

import tfteach as tf
from tfteach.errors import InvalidArgumentError
from tfteach.train import checkpoint_format
from tfteach.train.checkpoint_slices import slice_key
from tfteach.train.table_format import read_table

FULL = np.arange(390, dtype=np.float32).reshape(130, 3)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def _save(path: str, parts: int) -> str:
    v = tf.get_variable("emb", [130, 3], partitioner=tf.fixed_size_partitioner(parts),
                        initializer=tf.zeros_initializer())
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(v.assign(FULL))
        return saver.save(sess, path)


def _restored(prefix: str, parts: int | None, shape=(130, 3)) -> np.ndarray:
    tf.reset_default_graph()
    partitioner = tf.fixed_size_partitioner(parts) if parts else None
    v = tf.get_variable("emb", shape, partitioner=partitioner,
                        initializer=tf.zeros_initializer())
    whole = v.as_tensor() if parts else v
    saver = tf.train.Saver()
    with tf.Session() as sess:
        saver.restore(sess, prefix)
        return sess.run(whole)


def test_a_partitioned_variable_is_saved_in_slices_under_its_full_name(tmp_path):
    prefix = _save(str(tmp_path / "model"), 3)
    assert [n for n, _ in tf.train.list_variables(prefix)] == ["emb"]
    keys = [k for k, _ in read_table((tmp_path / "model.index").read_bytes())]
    # TF's encoded slice keys (rows 0..43, 44..86, 87..129; all 3 columns), then the name
    assert keys == [b"", slice_key("emb", ((0, 44), (0, 3))), slice_key("emb", ((44, 43), (0, 3))),
                    slice_key("emb", ((87, 43), (0, 3))), b"emb"]
    assert slice_key("emb", ((87, 43), (0, 3))) == b"\x00emb\x00\x01\x01\x02\xc0W\xab\x80\x83"
    assert np.array_equal(checkpoint_format.read_checkpoint(prefix)["emb"], FULL)


@pytest.mark.parametrize("parts", [3, 2, None])
def test_a_restore_cuts_each_part_out_of_the_saved_whole(tmp_path, parts):
    prefix = _save(str(tmp_path / "model"), 3)
    assert np.array_equal(_restored(prefix, parts), FULL)


def test_a_whole_variable_restores_into_parts(tmp_path):
    v = tf.Variable(FULL, name="emb")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(v.initializer)
        prefix = saver.save(sess, str(tmp_path / "whole"))
    assert np.array_equal(_restored(prefix, 4), FULL)


def test_another_full_shape_is_an_invalid_argument_naming_the_variable(tmp_path):
    prefix = _save(str(tmp_path / "model"), 3)
    with pytest.raises(InvalidArgumentError, match="tensor_name = emb; shape in "
                       "shape_and_slice spec \\[131, 3\\]"):
        _restored(prefix, 3, shape=(131, 3))
