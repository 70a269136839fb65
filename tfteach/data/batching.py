"""Mini-batches and worker shards over in-memory ``(x, y)`` arrays.

``batches`` walks one epoch: every sample exactly once, in a seeded random order (or in
order), in batches of ``batch_size`` with a smaller last batch when ``n`` does not divide.
``shard`` gives worker ``index`` of ``num_shards`` every ``num_shards``-th sample starting
at ``index``, as ``tf.data.Dataset.shard`` does: the shards are disjoint, together cover
all samples and differ in size by at most one. Both return copies, never views.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tfteach.errors import with_hint
from tfteach.i18n import tr


def _check_pair(x: np.ndarray, y: np.ndarray) -> int:
    """The number of samples, after checking that x and y agree on it."""
    if len(x) != len(y):
        raise ValueError(with_hint(f"x has {len(x)} samples but y has {len(y)}.",
                                   tr("pass the images and the labels of the same data set.")))
    return len(x)


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def batches(x: np.ndarray, y: np.ndarray, batch_size: int, shuffle: bool = True,
            seed: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """One epoch of ``(x_batch, y_batch)`` pairs; the last batch may be smaller.

    With ``shuffle`` the order is a permutation drawn from ``seed``: the same seed gives
    the same batches, so pass the epoch number as the seed to reshuffle every epoch.
    """
    x, y = np.asarray(x), np.asarray(y)
    n = _check_pair(x, y)
    if not _is_int(batch_size) or batch_size < 1:
        raise ValueError(with_hint(f"batch_size must be a positive integer, got {batch_size!r}.",
                                   tr("a typical mini-batch holds 32 to 128 samples.")))
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    return _iterate(x, y, order, int(batch_size))


def _iterate(x: np.ndarray, y: np.ndarray, order: np.ndarray,
             batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    for start in range(0, len(order), batch_size):
        chosen = order[start:start + batch_size]
        yield x[chosen], y[chosen]


def shard(x: np.ndarray, y: np.ndarray, num_shards: int,
          index: int) -> tuple[np.ndarray, np.ndarray]:
    """Worker ``index``'s part of the data when ``num_shards`` workers split it."""
    x, y = np.asarray(x), np.asarray(y)
    _check_pair(x, y)
    if not _is_int(num_shards) or num_shards < 1:
        raise ValueError(with_hint(
            f"num_shards must be a positive integer, got {num_shards!r}.",
            tr("use the number of worker tasks, e.g. cluster.num_tasks('worker').")))
    if not _is_int(index) or not 0 <= index < num_shards:
        raise ValueError(with_hint(
            f"shard index must be an integer from 0 to {num_shards - 1}, got {index!r}.",
            tr("use this worker's task index (the task_index it was started with).")))
    return np.ascontiguousarray(x[index::num_shards]), np.ascontiguousarray(y[index::num_shards])
