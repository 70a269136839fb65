"""``tf.TensorArray`` and the functional ops built on it (``map_fn``, ``scan``, ``foldl``,
``foldr``) against TensorFlow: op types, names, dtypes, static shapes, values, gradients,
and the errors a learner meets (writing an index twice, reading past the end)."""
import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

_X = np.arange(12, dtype=np.float32).reshape(4, 3) / 5.0 - 1.0


def _arrays(lib):
    ta = lib.TensorArray(lib.float32, size=3, clear_after_read=False)
    ta = ta.write(0, [1.0, 2.0]).write(2, lib.constant([5.0, 6.0]))
    ta = ta.scatter([1], lib.constant([[3.0, 4.0]]))
    un = lib.TensorArray(lib.int32, size=3).unstack(lib.constant([[1, 2], [3, 4], [5, 6]]))
    return [ta.read(1), ta.stack(), ta.gather([2, 0]), ta.size(), un.stack(), un.size()]


def _loop_with_array(lib):
    ta = lib.TensorArray(lib.float32, size=0, dynamic_size=True)

    def body(i, t):
        return i + 1, t.write(i, lib.cast(i, lib.float32) * lib.ones([2]))
    n, out = lib.while_loop(lambda i, t: i < 5, body, [lib.constant(0), ta])
    return [n, out.stack(), out.size()]


def _functional(lib, x=None):
    x = lib.constant(_X) if x is None else x
    return [lib.map_fn(lambda r: lib.reduce_sum(r * r), x),
            lib.map_fn(lambda r: (r, lib.cast(r > 0.0, lib.int32)), x,
                       dtype=(lib.float32, lib.int32))[1],
            lib.scan(lambda a, r: a * 0.5 + r, x),
            lib.scan(lambda a, r: a - r, x, initializer=lib.ones([3]), reverse=True),
            lib.foldl(lambda a, r: a + r * r, x),
            lib.foldr(lambda a, r: a * 2.0 + r, x, initializer=lib.zeros([3]))]


@pytest.mark.parametrize("build", [_arrays, _loop_with_array, _functional],
                         ids=lambda b: b.__name__)
def test_values_types_names_and_shapes_match_tf(build):
    assert_built_as_tf(build, tf, rtol=1e-6)


def test_gradients_through_map_scan_and_folds_match_tf():
    def grads(lib):
        with lib.Graph().as_default():
            x = lib.constant(_X)
            ys = _functional(lib, x)
            loss = sum(lib.reduce_sum(lib.sin(lib.cast(y, lib.float32))) for y in ys)
            with lib.Session() as session:
                return session.run(lib.gradients(loss, x)[0])

    np.testing.assert_allclose(grads(tf), grads(tf1), rtol=1e-5, atol=1e-6)


def test_gradients_of_read_gather_and_unstack_match_tf():
    def grads(lib):
        with lib.Graph().as_default():
            x = lib.constant(_X)
            ta = lib.TensorArray(lib.float32, size=4, clear_after_read=False).unstack(x * x)
            y = ta.read(1) * 3.0 + lib.reduce_sum(ta.gather([3, 1]), 0)
            with lib.Session() as session:
                return session.run(lib.gradients(lib.reduce_sum(y * y), x)[0])

    np.testing.assert_allclose(grads(tf), grads(tf1), rtol=1e-6)


@pytest.mark.parametrize("case", ["write_twice", "read_past_end", "read_twice"])
def test_errors_have_tfs_class(case):
    def error(lib):
        with lib.Graph().as_default():
            ta = lib.TensorArray(lib.float32, size=2)
            if case == "write_twice":
                y = ta.write(0, 1.0).write(0, 2.0).flow
            elif case == "read_past_end":
                y = ta.write(0, 1.0).read(3)
            else:
                w = ta.write(0, 1.0)
                y = w.read(0) + w.read(0) * 0.0
            with lib.Session() as session, pytest.raises(lib.errors.OpError) as info:
                session.run(y)
            return type(info.value).__name__

    assert error(tf) == error(tf1) == "InvalidArgumentError"


def _split_and_concat(lib, x):
    ragged = lib.TensorArray(lib.float32, size=3, infer_shape=False, clear_after_read=False)
    ragged = ragged.split(x * x, [1, 3, 0])
    even = lib.TensorArray(lib.float32, size=2).split(x, [2, 2])
    return [ragged.concat(), ragged.read(1), even.concat()]


def test_split_and_concat_match_tf_with_gradients():
    def run(lib):
        with lib.Graph().as_default():
            x = lib.constant(_X)
            ys = _split_and_concat(lib, x)
            shapes = [str(y.shape) for y in ys]
            grads = lib.gradients(lib.reduce_sum(lib.sin(ys[0]) * ys[2]), [x])
            with lib.Session() as session:
                return shapes, session.run(ys + grads)

    (want_shapes, want), (got_shapes, got) = run(tf1), run(tf)
    assert got_shapes == want_shapes
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_lengths_that_do_not_add_up_are_tfs_error():
    for lib in (tf1, tf):
        with lib.Graph().as_default(), lib.Session() as session:
            ta = lib.TensorArray(lib.float32, size=2, infer_shape=False).split(_X, [1, 2])
            with pytest.raises(lib.errors.InvalidArgumentError, match="sum of lengths"):
                session.run(ta.concat())
