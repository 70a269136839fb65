"""``tf.tensordot``, ``tf.einsum``, ``tf.reduce_logsumexp``, ``tf.norm``,
``tf.math.reduce_std`` / ``reduce_variance``, ``tf.segment_sum`` and ``tf.multinomial`` /
``tf.random.categorical`` against TensorFlow: op types, names, dtypes, static shapes,
values, gradients and error classes (draws: their shape, range and frequencies)."""
import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, error_class, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

A = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
B = np.linspace(-1.0, 2.0, 12, dtype=np.float32).reshape(3, 4)
X3 = np.linspace(-2.0, 3.0, 24, dtype=np.float32).reshape(2, 3, 4)


def _products(lib):
    a, b, x3 = lib.constant(A), lib.constant(B), lib.constant(X3)
    p = lib.placeholder_with_default(A, [None, 3])
    return [lib.tensordot(a, b, 1), lib.tensordot(a, lib.transpose(a), [[0, 1], [1, 0]]),
            lib.tensordot(a, b[0], 0, name="outer"), lib.tensordot(p, b, [[1], [0]]),
            lib.tensordot(x3, a, [[0, 1], [0, 1]]), lib.linalg.tensordot(x3, b, [[1], [0]]),
            lib.einsum("ij,jk->ik", a, b), lib.einsum("bij,bjk->bik", x3, lib.transpose(x3, [0, 2, 1])),
            lib.einsum("ij->ji", a), lib.einsum("ijk->ki", x3), lib.einsum("i,j->ij", a[0], b[0]),
            lib.einsum("ij,jk", a, b, name="implicit"), lib.einsum("ij,ij->", a, a),
            lib.linalg.einsum("ij,kj->ik", p, a),
            lib.einsum("...ij,...jk->...ik", x3, lib.transpose(x3, [0, 2, 1])),
            lib.einsum("...ij,...jk->...ik", x3, lib.ones([1, 4, 2])),
            lib.einsum("...ij,jk->...ik", x3, lib.ones([4, 2])), lib.einsum("...ij->...ji", x3),
            lib.einsum("i...->...", x3), lib.einsum("...ij,jk->ik...", a, b)]


def _reductions(lib):
    x, big = lib.constant(X3), lib.constant([[1000.0, 1000.0], [-np.inf, -np.inf]])
    return [lib.reduce_logsumexp(x), lib.reduce_logsumexp(x, 1), lib.reduce_logsumexp(big, 1),
            lib.reduce_logsumexp(x, [0, 2], keepdims=True), lib.math.reduce_logsumexp(x, -1),
            lib.norm(x), lib.norm(x, ord=1, axis=1), lib.norm(x, ord=np.inf, axis=0),
            lib.linalg.norm(x, axis=2, keepdims=True), lib.norm(x, ord=3, axis=-1),
            lib.norm(x, ord="fro", axis=[1, 2]), lib.norm(x, ord=1, axis=(1, 2)),
            lib.norm(x, ord=np.inf, axis=[2, 1]),
            lib.math.reduce_std(x, 1), lib.math.reduce_variance(x), lib.math.reduce_std(
                x, [0, 2], keepdims=True, name="sd"),
            lib.segment_sum(x, [0, 0]), lib.math.segment_sum(lib.constant(B), [0, 2, 2]),
            lib.segment_sum(lib.constant([1, 2, 3, 4]), lib.constant([0, 1, 1, 4], lib.int64))]


@pytest.mark.parametrize("build", [_products, _reductions], ids=["products", "reductions"])
def test_values_types_names_and_shapes_match_tf(build):
    assert_built_as_tf(build, tf, rtol=2e-6)


def _gradients(lib):
    with lib.Graph().as_default():
        a, b, x3 = lib.constant(A), lib.constant(B), lib.constant(X3)
        y = (lib.reduce_sum(lib.tensordot(x3, b, [[1], [0]]) ** 2)
             + lib.reduce_sum(lib.einsum("ij,jk->ik", a, b) ** 2)
             + lib.reduce_sum(lib.einsum("bij,k->bk", x3, b[1]) * 2.0)
             + lib.reduce_sum(lib.einsum("ijk->ki", x3) ** 2)
             + lib.reduce_sum(lib.einsum("...ij,...jk->...ik", x3, lib.transpose(x3, [0, 2, 1])[:1]) ** 2)
             + lib.reduce_sum(lib.einsum("i...->...", x3) ** 2)
             + lib.reduce_sum(lib.reduce_logsumexp(x3, 2)) + lib.norm(x3)
             + lib.reduce_sum(lib.norm(x3, ord=1, axis=1)) + lib.norm(a, ord=np.inf)
             + lib.reduce_sum(lib.math.reduce_std(x3, 0))
             + lib.reduce_sum(lib.segment_sum(x3, [0, 1]) ** 2))
        with lib.Session() as session:
            return session.run(lib.gradients(y, [a, b, x3]))


def test_gradients_match_tf():
    for got, want in zip(_gradients(tf), _gradients(tf1), strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def _draws(lib):
    with lib.Graph().as_default():
        logits = lib.log([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]])
        ys = [lib.multinomial(logits, 4000, seed=5), lib.random.categorical(
            logits, 3, dtype=lib.int32, seed=2), lib.random.multinomial(logits, 0)]
        described = [(y.op.type, y.name, y.dtype.name, y.shape.as_list()) for y in ys]
        with lib.Session() as session:
            return described, session.run(ys)


def test_draws_are_described_as_tf_and_follow_the_probabilities():
    (got, values), (want, _) = _draws(tf), _draws(tf1)
    assert got == want
    many = values[0]
    assert many.min() >= 0 and not (many[0] == 2).any()
    np.testing.assert_allclose((many[0] == 1).mean(), 0.8, atol=0.03)
    np.testing.assert_allclose(np.bincount(many[1], minlength=3) / 4000.0, [0.5, 0.25, 0.25],
                               atol=0.03)
    assert values[1].dtype == np.int32 and values[2].shape == (2, 0)


@pytest.mark.parametrize("build", [
    lambda lib: lib.tensordot(lib.constant(A), lib.constant(A), 1),
    lambda lib: lib.tensordot(lib.constant(A), lib.constant(B), [[1], [0, 1]]),
    lambda lib: lib.einsum("ij,jk->ik", lib.constant(A), lib.constant(A)),
    lambda lib: lib.einsum("ij,jk->ik", lib.constant(A)),
    lambda lib: lib.einsum("...ij,...jk", lib.constant(X3), lib.constant(X3)),
    lambda lib: lib.einsum("...ij,...jk->ik", lib.constant(X3), lib.constant(X3[:, :, :2])),
    lambda lib: lib.einsum("bij,bjk->bik", lib.constant(X3), lib.constant(X3[:1].transpose(0, 2, 1))),
    lambda lib: lib.norm(lib.constant(A), ord=-1),
    lambda lib: lib.norm(lib.constant(A), axis=[0, 0]),
    lambda lib: lib.math.reduce_variance(lib.constant([1, 2])),
    lambda lib: lib.segment_sum(lib.constant(A), [1, 0]),
    lambda lib: lib.segment_sum(lib.constant(A), [0, 0, 1]),
    lambda lib: lib.multinomial([1.0, 2.0], 3),
], ids=["tensordot-shapes", "tensordot-axes", "einsum-shapes", "einsum-count",
        "einsum-implicit-ellipsis", "einsum-ellipsis-dropped", "einsum-batch-1-vs-2", "norm-ord",
        "norm-axis", "variance-int", "segment-unsorted", "segment-length", "multinomial-rank"])
def test_errors_match_tf(build):
    expected = error_class(tf1, build)
    assert expected != "no error"
    assert error_class(tf, build) == expected
