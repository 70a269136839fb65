"""One epoch of mini-batches, and the shard each between-graph worker trains on."""
import numpy as np
import pytest

from tfteach.data import batches, shard


def _pairs(n):
    """x row i is [i, i] and its label is 10 * i, so a pairing can be checked."""
    return np.repeat(np.arange(n, dtype=np.float32)[:, None], 2, axis=1), np.arange(n) * 10


def test_batches_cover_one_epoch_with_a_smaller_last_batch():
    x, y = _pairs(10)
    sizes, seen = [], []
    for xb, yb in batches(x, y, batch_size=4):
        sizes.append(len(xb))
        seen.extend(yb.tolist())
    assert sizes == [4, 4, 2]
    assert sorted(seen) == y.tolist()


def test_batches_keep_each_label_with_its_image():
    x, y = _pairs(17)
    for xb, yb in batches(x, y, batch_size=5, seed=3):
        assert np.array_equal(xb[:, 0] * 10, yb)


def test_same_seed_gives_the_same_batches_and_another_seed_another_order():
    x, y = _pairs(50)
    first = [yb.tolist() for _, yb in batches(x, y, 8, seed=7)]
    again = [yb.tolist() for _, yb in batches(x, y, 8, seed=7)]
    other = [yb.tolist() for _, yb in batches(x, y, 8, seed=8)]
    assert first == again and first != other


def test_without_shuffle_batches_keep_the_data_order():
    x, y = _pairs(7)
    assert [yb.tolist() for _, yb in batches(x, y, 3, shuffle=False)] == [
        [0, 10, 20], [30, 40, 50], [60]]


@pytest.mark.parametrize("size", [0, -2, 2.5, None])
def test_a_bad_batch_size_is_refused_before_iterating(size):
    x, y = _pairs(4)
    with pytest.raises(ValueError, match="batch_size"):
        batches(x, y, size)


def test_x_and_y_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="x has 3 samples but y has 2"):
        batches(np.zeros((3, 2)), np.zeros(2), 2)


def test_shards_are_disjoint_balanced_and_cover_all_samples():
    x, y = _pairs(10)
    parts = [shard(x, y, num_shards=3, index=i) for i in range(3)]
    assert [len(py) for _, py in parts] == [4, 3, 3]
    labels = np.concatenate([py for _, py in parts])
    assert sorted(labels.tolist()) == y.tolist()
    for px, py in parts:
        assert np.array_equal(px[:, 0] * 10, py)


def test_a_shard_is_a_copy_not_a_view():
    x, y = _pairs(6)
    px, _ = shard(x, y, 2, 0)
    px[:] = -1
    assert x.min() == 0


@pytest.mark.parametrize("num_shards, index, problem", [
    (3, 3, "index"), (3, -1, "index"), (0, 0, "num_shards"), (2.0, 0, "num_shards")])
def test_a_bad_shard_index_or_count_is_refused_with_a_hint(num_shards, index, problem):
    x, y = _pairs(6)
    with pytest.raises(ValueError, match=problem) as info:
        shard(x, y, num_shards, index)
    assert "Hint:" in str(info.value)
