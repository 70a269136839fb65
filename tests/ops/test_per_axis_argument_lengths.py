"""tf.tile / tf.slice / tf.pad refuse per-axis arguments of the wrong length, as TF does
(they used to build a tensor of the wrong static shape)."""
import numpy as np
import pytest

import tfteach as tf

CASES = {
    "tile": (lambda t, x: t.tile(x, [2]), "Shape must be rank 2 but is rank 1"),
    "slice": (lambda t, x: t.slice(x, [0], [1]), "Shape must be rank 1 but is rank 2"),
    "pad": (lambda t, x: t.pad(x, [[1, 1]]), "Shape must be rank 1 but is rank 2"),
}


def _tf1():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    tf1.disable_v2_behavior()
    return tf1


@pytest.mark.parametrize("name", sorted(CASES))
def test_short_per_axis_argument_is_a_shape_error(name):
    build, message = CASES[name]
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            build(tf, tf.zeros([2, 3]))


@pytest.mark.conformance
@pytest.mark.parametrize("name", sorted(CASES))
def test_short_per_axis_argument_matches_tf(name):
    tf1 = _tf1()
    build, message = CASES[name]
    with tf1.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            build(tf1, tf1.zeros([2, 3]))


def _run_short_slice(t):
    with t.Graph().as_default():
        b = t.placeholder(t.int32, [None])
        y = t.slice(t.zeros([2, 3]), b, b)
        with t.Session() as sess:
            sess.run(y, {b: np.array([0], np.int32)})


def test_short_fed_slice_begin_is_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Expected begin and size arguments to be 1-D tensors of size 2, "
                             r"but got shapes \[1\] and \[1\] instead"):
        _run_short_slice(tf)


@pytest.mark.conformance
def test_short_fed_slice_begin_matches_tf():
    tf1 = _tf1()
    with pytest.raises(tf1.errors.InvalidArgumentError,
                       match=r"Expected begin and size arguments to be 1-D tensors of size 2, "
                             r"but got shapes \[1\] and \[1\] instead"):
        _run_short_slice(tf1)
