"""The shipped handwritten digits: contents, split and licence."""
import gzip
from pathlib import Path

import numpy as np
import pytest

import tfteach.data
from tfteach.data import load_digits

DATA_DIR = Path(tfteach.data.__file__).parent


def _raw_table():
    """The shipped file read independently of tfteach: rows of 64 pixels then the label."""
    with gzip.open(DATA_DIR / "digits.csv.gz", "rt") as f:
        return np.array([[int(v) for v in line.split(",")] for line in f])


def test_digits_file_ships_inside_the_package_with_its_licence():
    assert (DATA_DIR / "digits.csv.gz").stat().st_size < 100_000
    licence = (DATA_DIR / "DATA_LICENSE").read_text()
    assert "CC BY 4.0" in licence and "Alpaydin" in licence and "Kaynak" in licence


def test_digits_has_1797_samples_of_64_pixels_from_0_to_16():
    (x_train, y_train), (x_test, y_test) = load_digits()
    x = np.concatenate([x_train, x_test])
    assert x.shape == (1797, 64) and x.dtype == np.float32
    assert x.min() == 0 and x.max() == 16
    assert y_train.dtype == np.int64 and y_test.dtype == np.int64


def test_digits_has_the_uci_class_counts():
    (_, y_train), (_, y_test) = load_digits()
    counts = np.bincount(np.concatenate([y_train, y_test]))
    assert counts.tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_train_and_test_together_are_exactly_the_shipped_samples():
    (x_train, y_train), (x_test, y_test) = load_digits(test_fraction=0.3, seed=5)
    ours = np.concatenate([np.column_stack([x_train, y_train]),
                           np.column_stack([x_test, y_test])]).astype(np.int64)
    raw = _raw_table()
    assert np.array_equal(ours[np.lexsort(ours.T)], raw[np.lexsort(raw.T)])


def test_split_keeps_each_digits_share_in_the_test_part():
    (_, y_train), (_, y_test) = load_digits(test_fraction=0.2)
    total = np.bincount(np.concatenate([y_train, y_test]))
    assert np.array_equal(np.bincount(y_test), np.round(total * 0.2).astype(int))
    assert len(y_test) == 359


def test_same_seed_gives_the_same_split_and_another_seed_another():
    (x_a, y_a), _ = load_digits(seed=1)
    (x_b, y_b), _ = load_digits(seed=1)
    (x_c, _), _ = load_digits(seed=2)
    assert np.array_equal(x_a, x_b) and np.array_equal(y_a, y_b)
    assert not np.array_equal(x_a, x_c)


def test_each_call_returns_fresh_arrays():
    (x_train, _), _ = load_digits()
    x_train[:] = -1
    (again, _), _ = load_digits()
    assert again.min() == 0


def test_zero_test_fraction_gives_an_empty_test_part():
    (x_train, _), (x_test, y_test) = load_digits(test_fraction=0.0)
    assert x_train.shape == (1797, 64) and x_test.shape == (0, 64) and y_test.shape == (0,)


@pytest.mark.parametrize("fraction", [-0.1, 1.0, 2])
def test_test_fraction_outside_0_to_1_is_refused(fraction):
    with pytest.raises(ValueError, match="test_fraction") as info:
        load_digits(test_fraction=fraction)
    assert "Hint:" in str(info.value)
