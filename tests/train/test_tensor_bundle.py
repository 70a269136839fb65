"""TF's V2 checkpoint format written without TF: the table, the bundle, re-saves, and the
first tfteach format (.npz + JSON), which still restores."""
import json
import os
import zlib
from pathlib import Path

import numpy as np
import pytest

import tfteach as tf
from tfteach.errors import DataLossError
from tfteach.framework.record_io import crc32c, mask, masked_crc32c, unmask
from tfteach.train import checkpoint_format as cf
from tfteach.train import table_format
from tfteach.train.tensor_bundle import index_bytes, layout, parse_index


def test_crc32c_is_the_castagnoli_checksum():
    assert crc32c(b"123456789") == 0xE3069283      # the standard check value


def test_masking_is_tfs_rotation_plus_constant_and_unmasks():
    assert mask(0) == 0xA282EAD8
    assert unmask(masked_crc32c(b"abc")) == crc32c(b"abc")


def test_a_table_of_many_blocks_reads_back_every_entry_in_order(monkeypatch):
    monkeypatch.setattr(table_format, "BLOCK_SIZE", 1024)
    items = [(b"", b"header")] + [(f"layer{i:04d}/w".encode(), bytes(i % 40))
                                  for i in range(2000)]
    raw = table_format.build_table(items)
    assert list(table_format.read_table(raw)) == items


def test_a_table_refuses_keys_out_of_order():
    with pytest.raises(ValueError, match="sorted order"):
        table_format.build_table([(b"b", b""), (b"a", b"")])


def test_the_index_starts_with_the_header_and_lists_tensors_in_byte_order():
    arrays = {"b": np.zeros(2, "<f4"), "a/x": np.ones((), "<i8"), "B": np.ones(1, "<f2")}
    entries = layout(arrays)
    keys = [k for k, _ in table_format.read_table(index_bytes(entries))]
    assert keys == [b"", b"B", b"a/x", b"b"]
    header, parsed = parse_index(index_bytes(entries))
    assert header.num_shards == 1 and header.version.producer == 1
    assert parsed == entries


def test_tensors_lie_one_after_another_in_the_data_file():
    entries = layout({"w": np.zeros(3, "<f4"), "b": np.zeros(2, "<f8")})
    assert (entries["w"].offset, entries["w"].size) == (0, 12)
    assert (entries["b"].offset, entries["b"].size) == (12, 16)
    assert entries["w"].checksum == masked_crc32c(bytes(12))


def test_re_saving_a_prefix_switches_between_one_and_two_data_shards(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    for value in (1.0, 2.0):
        cf.write_checkpoint(prefix, {"w": np.full(2, value)})
        assert cf.read_checkpoint(prefix)["w"].tolist() == [value, value]
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt.data-00000-of-00002",
                                            "model.ckpt.data-00001-of-00002", "model.ckpt.index"]
    cf.write_checkpoint(prefix, {"w": np.full(2, 3.0)})
    assert cf.read_checkpoint(prefix)["w"].tolist() == [3.0, 3.0]
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt.data-00000-of-00001", "model.ckpt.index"]


# ---------------------------------------------------------------- the first tfteach format

def _legacy_checkpoint(prefix: str, tensors: dict) -> str:
    """A checkpoint as tfteach wrote them before: an .npz and a JSON index."""
    np.savez(prefix + ".data.npz", **tensors)
    index = {"format": "tfteach-checkpoint", "version": 1,
             "data_file": os.path.basename(prefix) + ".data.npz",
             "tensors": [{"name": k, "dtype": v.dtype.name, "shape": list(v.shape),
                          "crc32": zlib.crc32(np.ascontiguousarray(v).tobytes())}
                         for k, v in sorted(tensors.items())]}
    Path(prefix + ".index.json").write_text(json.dumps(index))
    return prefix


def test_a_checkpoint_of_the_first_format_still_restores_into_a_saver(tmp_path):
    prefix = _legacy_checkpoint(str(tmp_path / "old.ckpt-3"),
                                {"w": np.arange(4, dtype=np.float32), "step": np.int64(3)})
    w = tf.Variable(np.zeros(4, np.float32), name="w")
    step = tf.Variable(np.int64(0), name="step")
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, prefix)
        assert sess.run(w).tolist() == [0, 1, 2, 3] and sess.run(step) == 3
    assert tf.train.list_variables(prefix) == [("step", []), ("w", [4])]


def test_a_checkpoint_of_the_first_format_with_other_values_fails_the_checksum(tmp_path):
    prefix = _legacy_checkpoint(str(tmp_path / "old"), {"w": np.zeros(3)})
    np.savez(prefix + ".data.npz", w=np.array([0.0, 1.0, 0.0]))
    with pytest.raises(DataLossError, match="checksum of tensor 'w'"):
        cf.read_checkpoint(prefix)


def test_saving_over_a_first_format_checkpoint_replaces_it_by_a_v2_one(tmp_path):
    prefix = _legacy_checkpoint(str(tmp_path / "m"), {"w": np.zeros(3)})
    cf.write_checkpoint(prefix, {"w": np.ones(3)})
    assert sorted(os.listdir(tmp_path)) == ["m.data-00000-of-00001", "m.index"]
    assert cf.read_checkpoint(prefix)["w"].tolist() == [1.0, 1.0, 1.0]


def test_latest_checkpoint_finds_a_first_format_checkpoint(tmp_path):
    prefix = _legacy_checkpoint(str(tmp_path / "old.ckpt-1"), {"w": np.zeros(3)})
    cf.update_checkpoint_state(tmp_path, prefix)
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix
