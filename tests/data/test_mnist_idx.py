"""MNIST from IDX files on disk: raw and gzipped, and clear errors when they are wrong."""
import gzip
import struct

import numpy as np
import pytest

from tfteach.data import load_mnist
from tfteach.errors import DataLossError, NotFoundError

NAMES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def idx_bytes(array):
    """An uint8 array in IDX format: 0, 0, type 0x08, ndim, big-endian sizes, data."""
    array = np.asarray(array, dtype=np.uint8)
    return (bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
            + array.tobytes())


def write_mnist(directory, gz=(), n_train=5, n_test=3):
    """Small MNIST-shaped files; names in ``gz`` are written gzipped. Returns the arrays."""
    rng = np.random.default_rng(0)
    arrays = {NAMES[0]: rng.integers(0, 256, (n_train, 28, 28)),
              NAMES[1]: rng.integers(0, 10, n_train),
              NAMES[2]: rng.integers(0, 256, (n_test, 28, 28)),
              NAMES[3]: rng.integers(0, 10, n_test)}
    for name, array in arrays.items():
        data = idx_bytes(array)
        if name in gz:
            (directory / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (directory / name).write_bytes(data)
    return arrays


def _assert_matches(loaded, arrays):
    (x_train, y_train), (x_test, y_test) = loaded
    assert x_train.shape == (5, 784) and x_train.dtype == np.float32
    assert y_train.dtype == np.int64 and y_test.shape == (3,)
    assert np.array_equal(x_train, arrays[NAMES[0]].reshape(5, 784))
    assert np.array_equal(y_train, arrays[NAMES[1]])
    assert np.array_equal(x_test, arrays[NAMES[2]].reshape(3, 784))
    assert np.array_equal(y_test, arrays[NAMES[3]])


def test_load_mnist_reads_raw_idx_files(tmp_path):
    arrays = write_mnist(tmp_path)
    _assert_matches(load_mnist(tmp_path), arrays)


def test_load_mnist_reads_gzipped_idx_files(tmp_path):
    arrays = write_mnist(tmp_path, gz=NAMES)
    _assert_matches(load_mnist(str(tmp_path)), arrays)


def test_load_mnist_accepts_a_mix_of_raw_and_gzipped_files(tmp_path):
    arrays = write_mnist(tmp_path, gz=NAMES[1:3])
    _assert_matches(load_mnist(tmp_path), arrays)


def test_missing_files_are_named_with_where_to_put_them(tmp_path):
    write_mnist(tmp_path)
    (tmp_path / NAMES[0]).unlink()
    (tmp_path / NAMES[3]).unlink()
    with pytest.raises(NotFoundError) as info:
        load_mnist(tmp_path)
    message = info.value.message
    assert NAMES[0] in message and NAMES[3] in message
    assert NAMES[1] not in message and str(tmp_path) in message
    hint = info.value.hint
    assert all(name in hint for name in NAMES) and ".gz" in hint and str(tmp_path) in hint


def test_a_missing_directory_is_reported_as_such(tmp_path):
    with pytest.raises(NotFoundError, match="directory does not exist") as info:
        load_mnist(tmp_path / "mnist")
    assert all(name in info.value.message for name in NAMES)


def test_a_file_with_a_wrong_magic_number_is_data_loss_naming_it(tmp_path):
    arrays = write_mnist(tmp_path)
    (tmp_path / NAMES[2]).write_bytes(idx_bytes(arrays[NAMES[3]]))  # labels as images
    with pytest.raises(DataLossError, match=NAMES[2]) as info:
        load_mnist(tmp_path)
    assert "2049" in info.value.message and "2051" in info.value.message


def test_a_file_that_is_not_idx_at_all_is_data_loss(tmp_path):
    write_mnist(tmp_path)
    (tmp_path / NAMES[1]).write_bytes(b"<html>404 Not Found</html>")
    with pytest.raises(DataLossError, match=NAMES[1]):
        load_mnist(tmp_path)


def test_a_truncated_file_is_data_loss_naming_it(tmp_path):
    write_mnist(tmp_path)
    path = tmp_path / NAMES[0]
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataLossError, match=NAMES[0]) as info:
        load_mnist(tmp_path)
    assert "Hint:" in str(info.value)


def test_a_broken_gzip_file_is_data_loss_naming_it(tmp_path):
    write_mnist(tmp_path, gz=NAMES)
    path = tmp_path / f"{NAMES[3]}.gz"
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(DataLossError, match=f"{NAMES[3]}.gz"):
        load_mnist(tmp_path)


def test_images_and_labels_of_different_counts_are_data_loss(tmp_path):
    arrays = write_mnist(tmp_path)
    (tmp_path / NAMES[1]).write_bytes(idx_bytes(arrays[NAMES[1]][:4]))
    with pytest.raises(DataLossError, match="5 images but .* 4 labels"):
        load_mnist(tmp_path)
