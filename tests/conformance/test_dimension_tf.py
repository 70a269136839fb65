"""Static dimensions as TF 1.x programs read them, against TensorFlow after
``disable_v2_behavior()``: ``shape[i]`` is a ``Dimension`` (``.value``, ``int()``, an index),
its arithmetic and comparisons (unknown stays unknown, ``==`` gives None), its errors, what a
shape prints, ``TensorShape``'s rank checks and concatenation, and ``Dimension`` values given
back to ``zeros``, ``reshape``, ``get_variable``, ``placeholder`` and indexing."""
import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance


def _outcome(make):
    """What a learner sees: the value's type name and repr, or the error's class and text."""
    try:
        value = make()
    except (TypeError, ValueError) as e:
        return ("raises", type(e).__name__, str(e))
    return (type(value).__name__, repr(value))


def _reading(lib):
    x = lib.placeholder(lib.float32, [None, 28, 3])
    s, d, unknown = x.get_shape(), lib.Dimension, lib.placeholder(lib.float32).get_shape()
    return [
        lambda: s[1], lambda: s[0], lambda: s[-1], lambda: s[1].value, lambda: s[0].value,
        lambda: str(s[0]), lambda: str(s[1]), lambda: s[1:], lambda: list(s), lambda: tuple(s),
        lambda: s.as_list(), lambda: repr(s), lambda: str(s), lambda: s == [None, 28, 3],
        lambda: unknown[2], lambda: unknown[1:3], lambda: unknown[1:], lambda: repr(unknown),
        lambda: int(s[1]), lambda: [10, 11, 12, 13][s[2]], lambda: list(range(s[2])),
        lambda: "%d" % s[2], lambda: "{}x{}".format(s[0], s[1]), lambda: bool(s[0]),
        lambda: bool(d(0)), lambda: bool(s[1]), lambda: float(s[2]),
        lambda: np.zeros([s[2], 2]).shape, lambda: d(d(4)), lambda: repr(d(None)),
        lambda: lib.compat.v1.Dimension(5), lambda: lib.compat.dimension_value(s[1]),
        lambda: lib.compat.dimension_value(s[0]), lambda: lib.compat.dimension_value(7),
        lambda: lib.compat.dimension_at_index(unknown, 2), lambda: np.prod(s[1:]),
    ]


def _arithmetic(lib):
    s, d = lib.placeholder(lib.float32, [None, 28, 3]).get_shape(), lib.Dimension
    return [
        lambda: s[1] * s[2], lambda: s[0] * 2, lambda: 2 * s[1], lambda: s[1] + 1,
        lambda: 1 + s[1], lambda: s[1] - 1, lambda: 30 - s[1], lambda: s[1] // 5,
        lambda: 57 // s[1], lambda: s[1] % 5, lambda: 30 % s[1], lambda: d(None) + d(None),
        lambda: s[0] // 2, lambda: s[1] == 28, lambda: s[1] == d(28), lambda: s[1] != 28,
        lambda: s[1] == 27, lambda: s[0] == None, lambda: s[0] != None,  # noqa: E711
        lambda: s[0] == 3, lambda: d(None) == d(None), lambda: s[1] < 30, lambda: s[1] >= 28,
        lambda: s[0] < 30, lambda: s[1] > d(None), lambda: max(s[1], 5), lambda: s[1] == "28",
        lambda: s[1].is_compatible_with(28), lambda: s[0].is_compatible_with(5),
        lambda: s[1].is_compatible_with(5), lambda: s[0].merge_with(5),
        lambda: s[1].merge_with(None),
    ]


def _errors(lib):
    s, d = lib.placeholder(lib.float32, [None, 28, 3]).get_shape(), lib.Dimension
    return [
        lambda: s[1] / 2, lambda: 56 / s[1], lambda: d(-1), lambda: d(3.5), lambda: d("3"),
        lambda: int(s[0]), lambda: hash(s[1]), lambda: s[1].merge_with(5),
        lambda: s[1].assert_is_compatible_with(d(4)), lambda: s[1] < "a",
        lambda: lib.convert_to_tensor(s), lambda: lib.convert_to_tensor(s[0]),
        lambda: lib.constant([s[1], 2]), lambda: lib.reshape(lib.zeros([6]), [s[0], 2]),
    ]


def _building(lib):
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float32, [None, 28, 3])
        s = x.get_shape()
        made = [lib.zeros([s[1], 2]), lib.reshape(x, [-1, s[1] * s[2]]),
                lib.get_variable("w", [s[2], 4]), lib.placeholder(lib.float32, [s[0], s[2]]),
                lib.ones(s[1:]), lib.reshape(lib.zeros([6, 2]), lib.TensorShape([s[2], 4])),
                lib.convert_to_tensor(s[1]), lib.constant([s[1], 2], lib.int64),
                lib.one_hot([1, 2], s[1]), lib.split(x, s[2], axis=2)[0]]
        return [repr(t.get_shape()) for t in made] + [
            repr(lib.TensorShape([lib.Dimension(2), None])), repr(lib.TensorShape([])),
            str(lib.TensorShape([lib.Dimension(None)]))]


def _shapes(lib):
    x = lib.placeholder(lib.float32, [None, 28, 3])
    s, unknown = x.get_shape(), lib.placeholder(lib.float32).get_shape()
    return [
        lambda: s.concatenate([4]), lambda: s[1:] + [4], lambda: [4] + s[1:],
        lambda: s + unknown, lambda: unknown.with_rank(2), lambda: s.with_rank(3),
        lambda: s.with_rank(2), lambda: s.with_rank_at_least(2), lambda: s.with_rank_at_least(4),
        lambda: s.with_rank_at_most(2), lambda: s.assert_has_rank(2),
        lambda: s.assert_same_rank([1, 2]), lambda: s.assert_is_compatible_with([1, 28, 3]),
        lambda: s.assert_is_compatible_with([1, 27, 3]), lambda: s.assert_is_fully_defined(),
        lambda: s.merge_with([5, None, None]), lambda: x[:, s[1] - 1].get_shape(),
        lambda: x[:, :s[1] // 2].get_shape(),
    ]


@pytest.mark.parametrize("probe", [_reading, _arithmetic, _errors, _shapes])
def test_dimensions_read_as_in_tf(probe):
    with tf1.Graph().as_default():
        expected = [_outcome(make) for make in probe(tf1)]
    with tf.Graph().as_default():
        got = [_outcome(make) for make in probe(tf)]
    assert got == expected


def test_dimensions_build_tensors_as_in_tf():
    assert _building(tf) == _building(tf1)
