"""``tensor[...]`` and ``tf.strided_slice`` against TensorFlow's compat.v1: values, static
shapes, the op and its masks, names, gradients and the out-of-bounds error.

Runs only where TensorFlow is installed; otherwise the whole module skips.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach

DATA = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
INDICES = {
    "x[0]": lambda t, tf: t[0],
    "x[:, 1]": lambda t, tf: t[:, 1],
    "x[-1, :, 1:3]": lambda t, tf: t[-1, :, 1:3],
    "x[..., ::2]": lambda t, tf: t[..., ::2],
    "x[:, tf.newaxis, 2]": lambda t, tf: t[:, tf.newaxis, 2],
    "x[::-1, ::2, -3:]": lambda t, tf: t[::-1, ::2, -3:],
    "x[1, 2, 3]": lambda t, tf: t[1, 2, 3],
    "x[1, ..., None]": lambda t, tf: t[1, ..., None],
    "x[tf.constant(1)]": lambda t, tf: t[tf.constant(1)],
    "shape(x)[0]": lambda t, tf: tf.shape(t)[0],
    "strided_slice": lambda t, tf: tf.strided_slice(t, [0, 1, 0], [2, 3, 4], [1, 1, 3],
                                                     shrink_axis_mask=2),
}


def build_and_run(mod, index, batch_dim=None):
    """``index`` of a placeholder on ``mod``: (static shape, op, value, gradient)."""
    with mod.Graph().as_default():
        x = mod.placeholder(mod.float32, [batch_dim, 3, 4], name="x")
        y = index(x, mod)
        grads = mod.gradients(mod.reduce_sum(mod.cast(y, mod.float32) * 3.0), x) \
            if y.dtype == mod.float32 else [None]
        with mod.Session() as sess:
            fetched = sess.run([y] + [g for g in grads if g is not None], {x: DATA})
        return y.shape.as_list() if y.shape.ndims is not None else None, y.op, fetched


@pytest.mark.parametrize("name", sorted(INDICES))
@pytest.mark.parametrize("batch_dim", [None, 2])
def test_slicing_matches_tensorflow(name, batch_dim):
    ours, theirs = (build_and_run(mod, INDICES[name], batch_dim) for mod in (tfteach, tf1))
    (our_shape, our_op, our_values), (their_shape, their_op, their_values) = ours, theirs
    assert len(our_values) == len(their_values)
    for a, b in zip(our_values, their_values, strict=True):
        np.testing.assert_array_equal(a, b)
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
    if their_shape is not None and our_shape is not None:
        assert our_shape == their_shape
    assert (our_op.type, our_op.name) == (their_op.type, their_op.name)
    for mask in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                 "shrink_axis_mask"):
        assert our_op.get_attr(mask) == their_op.get_attr(mask), mask


def test_an_index_out_of_bounds_is_the_same_error():
    messages = []
    for mod in (tfteach, tf1):
        with mod.Graph().as_default():
            x = mod.placeholder(mod.float32, [None, 3, 4])
            with mod.Session() as sess, pytest.raises(mod.errors.InvalidArgumentError) as info:
                sess.run(x[5], {x: DATA})
            messages.append(str(info.value.message))
    ours = messages[0].split("\n")[0]
    assert ours == "slice index 5 of dimension 0 out of bounds."
    assert ours in messages[1]


BAD_INDICES = {
    "a scalar": ([], lambda t: t[0]),
    "too many indices": ([None, 3], lambda t: t[1, 2, 3]),
    "an index past a known size": ([2, 3], lambda t: t[5]),
    "a zero step": ([2, 3], lambda t: t[:, ::0]),
}


@pytest.mark.parametrize("name", sorted(BAD_INDICES))
def test_an_impossible_index_is_refused_while_building_as_in_tensorflow(name):
    shape, index = BAD_INDICES[name]
    messages = []
    for mod in (tfteach, tf1):
        with mod.Graph().as_default():
            x = mod.placeholder(mod.float32, shape)
            with pytest.raises(ValueError) as info:
                index(x)
            messages.append(str(info.value).split(" for '")[0])
    assert messages[0] == messages[1]


def _run_time_index_shapes(mod):
    x = mod.placeholder(mod.float32, [4, 3, 5])
    t, u = mod.placeholder(mod.int32, []), mod.placeholder(mod.int32, [])
    slices = [x[t], x[t, 1:], x[:, t], x[1:t], x[..., t], x[t, mod.newaxis], x[t:t + 2, ::2],
              x[t, u], x[::-1, t]]
    return [s.shape.as_list() for s in slices]


def test_an_index_known_only_at_run_time_keeps_the_static_shape_tensorflow_infers():
    """``x[t]`` in a loop body: the rank, the shrunk axis and the untouched ones are known
    while building, so a loop variable built from it keeps its shape."""
    assert _run_time_index_shapes(tfteach) == _run_time_index_shapes(tf1)
    assert _run_time_index_shapes(tfteach)[0] == [3, 5]
