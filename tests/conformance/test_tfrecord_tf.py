"""TFRecord files between tfteach and TensorFlow: files that ``tf.python_io.TFRecordWriter``
writes (plain, GZIP, ZLIB) read back record for record by the other runtime's
``tf_record_iterator`` and ``tf.data.TFRecordDataset`` (TF's graph: flat_filenames, a
TensorSliceDataset, a FlatMapDataset), byte-identical plain files, and the error classes of a
missing, a cut-off and a damaged file."""
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

RECORDS = [b"hello", b"", bytes(range(256)) * 3, "caf\u00e9"]
AS_BYTES = [r.encode() if isinstance(r, str) else r for r in RECORDS]
COMPRESSIONS = ["", "GZIP", "ZLIB"]


def _write(lib, path, compression):
    options = lib.python_io.TFRecordOptions(compression_type=compression)
    with lib.python_io.TFRecordWriter(str(path), options=options) as writer:
        for record in RECORDS:
            writer.write(record)


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("writer, reader", [(tf, tf1), (tf1, tf)], ids=["ours", "tfs"])
def test_records_written_by_one_are_read_by_the_other(writer, reader, compression, tmp_path):
    path = tmp_path / "data.tfrecord"
    _write(writer, path, compression)
    options = reader.io.TFRecordOptions(compression_type=compression)
    assert list(reader.io.tf_record_iterator(str(path), options=options)) == AS_BYTES


def test_plain_files_are_byte_identical(tmp_path):
    _write(tf, tmp_path / "ours", "")
    _write(tf1, tmp_path / "tfs", "")
    assert (tmp_path / "ours").read_bytes() == (tmp_path / "tfs").read_bytes()


def _failures(lib, tmp_path):
    good = tmp_path / "good"
    _write(tf1, good, "")
    data = good.read_bytes()
    (tmp_path / "cut").write_bytes(data[:-3])
    (tmp_path / "damaged").write_bytes(data[:14] + b"X" + data[15:])
    out = []
    for name in ("missing", "cut", "damaged"):
        with pytest.raises(lib.errors.OpError) as info:
            list(lib.python_io.tf_record_iterator(str(tmp_path / name)))
        out.append(type(info.value).__name__)
    return out


def test_a_missing_cut_or_damaged_file_fails_as_in_tf(tmp_path):
    assert _failures(tf, tmp_path) == _failures(tf1, tmp_path) == [
        "NotFoundError", "DataLossError", "DataLossError"]


def test_compression_names_match_tf():
    for lib in (tf, tf1):
        kinds = lib.python_io.TFRecordCompressionType
        assert (kinds.NONE, kinds.ZLIB, kinds.GZIP) == (0, 1, 2)
        assert [lib.python_io.TFRecordOptions.get_compression_type_string(k)
                for k in (None, kinds.GZIP, "ZLIB")] == ["", "GZIP", "ZLIB"]
        assert lib.io.TFRecordWriter is lib.python_io.TFRecordWriter
    assert all(hasattr(tf.io, n) for n in ("decode_csv", "decode_raw"))


def _dataset(lib, paths, **kwargs):
    """TFRecordDataset's records and the top-level op types it built."""
    with lib.Graph().as_default() as g:
        ds = lib.data.TFRecordDataset([str(p) for p in paths], **kwargs)
        types = [op.type for op in g.get_operations()]
        element = ds.make_one_shot_iterator().get_next()
        out = []
        with lib.Session() as session:
            while True:
                try:
                    out.append(session.run(element))
                except lib.errors.OutOfRangeError:
                    return (ds.output_types.name, ds.output_shapes.as_list(), types), out


@pytest.mark.parametrize("compression", ["", "GZIP"])
@pytest.mark.parametrize("writer, reader", [(tf, tf1), (tf1, tf)], ids=["ours", "tfs"])
def test_tfrecord_dataset_reads_the_other_runtimes_files(writer, reader, compression,
                                                          tmp_path):
    paths = [tmp_path / "a", tmp_path / "b"]
    for path in paths:
        _write(writer, path, compression)
    built, records = _dataset(reader, paths, compression_type=compression)
    assert records == AS_BYTES * 2
    assert built == _dataset(writer, paths, compression_type=compression)[0]


def test_parallel_reads_interleave_the_files_as_in_tf(tmp_path):
    paths = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    for i, path in enumerate(paths):
        with tf.python_io.TFRecordWriter(str(path)) as writer:
            for j in range(i + 2):
                writer.write(f"{i}-{j}")
    assert _dataset(tf, paths, num_parallel_reads=2)[1] == \
        _dataset(tf1, paths, num_parallel_reads=2)[1]


def _dataset_failures(lib, tmp_path):
    _failures(tf1, tmp_path)            # writes good, cut and damaged files
    out = []
    for name in ("missing", "cut", "damaged"):
        with lib.Graph().as_default():
            element = lib.data.TFRecordDataset(str(tmp_path / name)).make_one_shot_iterator(
                ).get_next()
            with lib.Session() as session, pytest.raises(lib.errors.OpError) as info:
                for _ in range(len(RECORDS) + 1):
                    session.run(element)
        out.append(type(info.value).__name__)
    return out


def test_a_missing_cut_or_damaged_file_fails_in_the_dataset_as_in_tf(tmp_path):
    assert _dataset_failures(tf, tmp_path) == _dataset_failures(tf1, tmp_path) == [
        "NotFoundError", "DataLossError", "DataLossError"]
