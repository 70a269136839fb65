"""``tf.boolean_mask``, ``tf.where(cond)``, ``tf.eye`` and the batched diagonals,
``tf.linspace``, ``tf.meshgrid``, ``tf.setdiff1d`` and ``tf.bincount`` against TensorFlow:
op types, names, dtypes, static shapes, values, gradients and error classes."""
import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, error_class, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

M = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _masks(lib):
    x = lib.constant(M)
    p = lib.placeholder_with_default(lib.constant([[True, False, True], [False, True, True]]),
                                     [2, None])
    return [lib.boolean_mask(x, [True, False]),
            lib.boolean_mask(x, [[True, False, True], [False, True, True]], name="both"),
            lib.boolean_mask(x, [True, False, True], axis=1),
            lib.boolean_mask(lib.reshape(lib.range(24), [2, 3, 4]), p, axis=0),
            lib.where([[True, False], [True, True]]), lib.where(lib.constant([0, 3, 0, 1]))]


def _diagonals(lib):
    d = lib.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    return [lib.eye(3), lib.eye(2, 3, dtype=lib.int32), lib.eye(3, 2), lib.eye(2, batch_shape=[3]),
            lib.eye(2, 2, name="I"), lib.linalg.diag(d), lib.matrix_diag(d[0]),
            lib.linalg.diag_part(lib.reshape(lib.range(24.0), [2, 3, 4])),
            lib.linalg.set_diag(lib.ones([3, 2, 3]), d), lib.linalg.eye(2)]


def test_eye_takes_tensor_sizes_as_tf():
    """``tf.eye(tf.shape(x)[0])``: TF's values and dtypes (TF's shape inference folds the
    sizes into a static shape; tfteach's leaves them to the run)."""
    def built(lib):
        with lib.Graph().as_default():
            d = lib.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
            ys = [lib.eye(lib.shape(d)[0]), lib.eye(2, lib.shape(d)[1] + 1, batch_shape=[2]),
                  lib.eye(lib.shape(d)[1], batch_shape=lib.shape(d)[:1], dtype=lib.int64)]
            with lib.Session() as session:
                return [(y.op.type, y.name) for y in ys], session.run(ys)
    (got_ops, got), (want_ops, want) = built(tf), built(tf1)
    assert got_ops == want_ops
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def _grids(lib):
    return [lib.linspace(0.0, 1.0, 5), lib.lin_space(-2.0, 3.0, 7), lib.linspace(1.0, 2.0, 1),
            lib.linspace(lib.constant(0.0, lib.float64), 10.0, 4, name="ten"),
            *lib.meshgrid([1, 2, 3], [4, 5]), *lib.meshgrid([1.0, 2.0], [3.0, 4.0, 5.0], [6.0],
                                                              indexing="ij")]


def _counts(lib):
    return [*lib.setdiff1d([1, 2, 3, 4, 2, 5], [2, 4]),
            *lib.setdiff1d(lib.constant([1.5, 2.5]), [2.5], index_dtype=lib.int64),
            lib.bincount([1, 1, 3]), lib.bincount([1, 1, 3], weights=[1.0, 2.0, 3.0], minlength=6),
            lib.bincount([[5, 1], [1, 0]], maxlength=3), lib.bincount(lib.zeros([0], lib.int32)),
            lib.math.bincount(lib.placeholder_with_default([2, 0, 2], [None]), dtype=lib.float32),
            lib.reduce_max(lib.zeros([0])), lib.reduce_min(lib.zeros([2, 0], lib.int32), 1)]


@pytest.mark.parametrize("build", [_masks, _diagonals, _grids, _counts],
                         ids=["masks", "diagonals", "grids", "counts"])
def test_values_types_names_and_shapes_match_tf(build):
    assert_built_as_tf(build, tf, rtol=1e-6)


def _gradients(lib):
    with lib.Graph().as_default():
        x = lib.constant(np.arange(1.0, 13.0, dtype=np.float32).reshape(2, 3, 2))
        d = lib.constant([[1.0, 2.0], [3.0, 4.0]])
        y = (lib.reduce_sum(lib.boolean_mask(x, [[True, False, True], [False, True, True]]) ** 2)
             + lib.reduce_sum(lib.boolean_mask(x, [False, True], axis=2) * 3.0)
             + lib.reduce_sum(lib.linalg.diag(d) * lib.constant([[1.0, 2.0], [3.0, 4.0]]))
             + lib.reduce_sum(lib.linalg.diag_part(x) * 5.0)
             + lib.reduce_sum(lib.linalg.set_diag(x, d * d) ** 2))
        with lib.Session() as session:
            return session.run(lib.gradients(y, [x, d]))


def test_gradients_match_tf():
    for got, want in zip(_gradients(tf), _gradients(tf1), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("build", [
    lambda lib: lib.boolean_mask(lib.constant(M), True),
    lambda lib: lib.boolean_mask(lib.constant(M), lib.placeholder(lib.bool)),
    lambda lib: lib.boolean_mask(lib.constant(M), [True, False, True]),
    lambda lib: lib.eye(2.5),
    lambda lib: lib.setdiff1d([[1, 2]], [1]),
    lambda lib: lib.bincount([1, -1, 2]),
    lambda lib: lib.linalg.set_diag(lib.ones([2, 3]), lib.placeholder_with_default([1.0], [None])),
], ids=["scalar-mask", "unknown-rank-mask", "mask-shape", "eye-float", "setdiff-rank",
        "bincount-negative", "set-diag-length"])
def test_errors_match_tf(build):
    expected = error_class(tf1, build)
    assert expected != "no error"
    assert error_class(tf, build) == expected
