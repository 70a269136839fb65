"""Conformance: checkpoints go both ways between tfteach's Saver and TensorFlow's.

tfteach writes TF's V2 format (``.index`` + ``.data-00000-of-00001``) without TF; here
TensorFlow's compat.v1 ``Saver.restore``, ``tf.train.load_checkpoint`` and
``list_variables`` read what tfteach wrote, and tfteach restores what TF wrote."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1, tf_real  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402
from tfteach.train import tensor_bundle  # noqa: E402

VALUES = {"dense/kernel": np.arange(6, dtype=np.float32).reshape(2, 3),
          "dense/bias": np.array([0.5, -1.5], dtype=np.float32),
          "global_step": np.int64(42), "scale": np.float64(2.25)}


@pytest.fixture(autouse=True)
def fresh_graphs():
    tf1.reset_default_graph()
    tfteach.reset_default_graph()


def _variables(tf, initial: bool):
    """The same variables on either runtime (zeros unless ``initial``)."""
    return {name: tf.Variable(value if initial else np.zeros_like(value), name=name)
            for name, value in VALUES.items()}


def _save_with(tf, directory, step=None) -> str:
    _variables(tf, initial=True)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return saver.save(sess, os.path.join(directory, "model.ckpt"), global_step=step)


def _restore_with(tf, prefix: str) -> dict:
    variables = _variables(tf, initial=False)
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)
        return sess.run(variables)


def _assert_values(restored: dict) -> None:
    for name, value in VALUES.items():
        assert np.asarray(restored[name]).dtype == np.asarray(value).dtype, name
        assert np.array_equal(restored[name], value), name


def test_tensorflow_restores_a_checkpoint_tfteach_saved(tmp_path):
    prefix = _save_with(tfteach, str(tmp_path), step=7)
    _assert_values(_restore_with(tf1, prefix))


def test_tfteach_restores_a_checkpoint_tensorflow_saved(tmp_path):
    prefix = _save_with(tf1, str(tmp_path), step=7)
    _assert_values(_restore_with(tfteach, prefix))


def test_tensorflow_finds_tfteachs_latest_checkpoint_through_the_state_file(tmp_path):
    prefix = _save_with(tfteach, str(tmp_path), step=3)
    assert tf1.train.latest_checkpoint(str(tmp_path)) == prefix


def test_load_checkpoint_and_list_variables_read_tfteachs_files(tmp_path):
    prefix = _save_with(tfteach, str(tmp_path))
    assert tf_real.train.list_variables(prefix) == tfteach.train.list_variables(prefix)
    reader = tf_real.train.load_checkpoint(prefix)
    assert reader.get_variable_to_dtype_map()["global_step"] == tf_real.int64
    assert np.array_equal(reader.get_tensor("dense/kernel"), VALUES["dense/kernel"])


def test_tensorflow_restores_a_re_saved_prefix_of_two_data_shards(tmp_path):
    prefix = _save_with(tfteach, str(tmp_path))
    tfteach.reset_default_graph()
    assert _save_with(tfteach, str(tmp_path)) == prefix
    assert os.path.exists(prefix + ".data-00000-of-00002")
    _assert_values(_restore_with(tf1, prefix))


def test_the_index_file_is_byte_for_byte_what_tensorflow_writes(tmp_path):
    prefix = _save_with(tf1, str(tmp_path))
    theirs = Path(prefix + ".index").read_bytes()
    header, entries = tensor_bundle.parse_index(theirs)
    assert tensor_bundle.index_bytes(entries, header.num_shards) == theirs


def test_the_data_file_is_byte_for_byte_what_tensorflow_writes(tmp_path):
    (tmp_path / "tf").mkdir()
    (tmp_path / "ours").mkdir()
    theirs = _save_with(tf1, str(tmp_path / "tf"))
    ours = _save_with(tfteach, str(tmp_path / "ours"))
    their_entries = tensor_bundle.parse_index(Path(theirs + ".index").read_bytes())[1]
    our_entries = tfteach.train.checkpoint_format.read_index(ours)
    data = [Path(p + ".data-00000-of-00001").read_bytes() for p in (theirs, ours)]
    for name in VALUES:
        t, o = their_entries[name], our_entries[name]
        assert data[0][t.offset:t.offset + t.size] == data[1][o.offset:o.offset + o.size]
        assert t.checksum == o.checksum, name
