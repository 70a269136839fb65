"""The UCI handwritten digits, shipped with tfteach (origin and licence: DATA_LICENSE).

``digits.csv.gz`` next to this module has 1797 rows of 65 integers: 64 pixel values (an
8x8 image, row by row, each 0..16), then the digit 0..9. The file is parsed once and kept
read-only in a cache; ``load_digits`` indexes into it, so each call returns new arrays.
The train/test split is stratified (each digit keeps its share in both parts) and depends
only on the seed.
"""
from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

from tfteach.errors import with_hint
from tfteach.i18n import tr

DIGITS_FILE = Path(__file__).with_name("digits.csv.gz")
NUM_PIXELS = 64

Split = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@functools.lru_cache(maxsize=1)
def _all_digits() -> tuple[np.ndarray, np.ndarray]:
    """All 1797 samples as read-only (x float32 [1797, 64], y int64 [1797])."""
    with gzip.open(DIGITS_FILE, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    x = table[:, :NUM_PIXELS].astype(np.float32)
    y = table[:, NUM_PIXELS].astype(np.int64)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def _stratified_split(y: np.ndarray, test_fraction: float,
                      seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Shuffled train and test indices; each class sends round(count * fraction) to test."""
    rng = np.random.default_rng(seed)
    is_test = np.zeros(len(y), dtype=bool)
    for label in np.unique(y):
        members = rng.permutation(np.flatnonzero(y == label))
        is_test[members[:int(round(len(members) * test_fraction))]] = True
    return rng.permutation(np.flatnonzero(~is_test)), rng.permutation(np.flatnonzero(is_test))


def load_digits(test_fraction: float = 0.2, seed: int = 0) -> Split:
    """The handwritten digits as ``((x_train, y_train), (x_test, y_test))``.

    ``x`` is float32 ``[n, 64]`` with raw pixel values 0..16 (divide by 16 to scale to
    0..1), ``y`` is int64 digits 0..9. ``test_fraction`` of each digit goes to the test
    part; the same ``seed`` always gives the same split and order.
    """
    if not 0.0 <= test_fraction < 1.0:
        raise ValueError(with_hint(
            f"test_fraction must be at least 0 and below 1, got {test_fraction!r}.",
            tr("use e.g. test_fraction=0.2 to keep a fifth for testing.")))
    x, y = _all_digits()
    train, test = _stratified_split(y, test_fraction, seed)
    return (x[train], y[train]), (x[test], y[test])
