"""``tf.diag``, ``tf.diag_part`` and ``tf.matrix_inverse`` against TensorFlow: values, op
types and names, shapes and dtypes, their gradients, and the errors of a singular matrix and
of a non-square one."""
import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

M = [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]]


def _build(lib):
    d = lib.diag([1, 2, 3])
    d2 = lib.diag(lib.constant([[1.0, 2.0], [3.0, 4.0]]), name="square")
    ys = [d, d2, lib.diag_part(d), lib.diag_part(d2), lib.matrix_inverse(M),
          lib.matrix_inverse(lib.constant([M, M], lib.float64), adjoint=True, name="inv")]
    return ys


def test_values_types_names_and_shapes_match_tf():
    assert_built_as_tf(_build, tf, rtol=1e-5)


@pytest.mark.parametrize("adjoint", [False, True])
def test_gradients_match_tf(adjoint):
    def grads(lib):
        with lib.Graph().as_default():
            x = lib.constant(M)
            v = lib.constant([1.0, -2.0, 0.5])
            w = lib.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
            y = lib.matrix_inverse(x, adjoint=adjoint) * w + lib.diag(v * v) * w
            y = lib.reduce_sum(y) + lib.reduce_sum(lib.diag_part(x * w))
            with lib.Session() as session:
                return session.run(lib.gradients(y, [x, v]))

    for e, g in zip(grads(tf1), grads(tf), strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5)


def test_a_singular_matrix_fails_as_in_tf():
    def failure(lib):
        with lib.Graph().as_default():
            y = lib.matrix_inverse([[1.0, 2.0], [2.0, 4.0]])
            with lib.Session() as session, pytest.raises(lib.errors.InvalidArgumentError) as e:
                session.run(y)
        return e.value.message

    assert failure(tf).splitlines()[0] in failure(tf1)


def test_a_non_square_matrix_fails_at_build_as_in_tf():
    def failure(lib):
        with lib.Graph().as_default(), pytest.raises(ValueError) as info:
            lib.matrix_inverse([[1.0, 2.0, 3.0]])
        return str(info.value)

    assert failure(tf).split(" for ")[0] == failure(tf1).split(" for ")[0]
