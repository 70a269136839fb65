"""``tf.gather_nd`` and ``tf.scatter_nd`` against TensorFlow: values (full elements,
slices, repeated scatter indices adding up), op types and names, shapes and dtypes, their
gradients, and the error of an index out of range."""
import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

P = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _build(lib):
    p = lib.constant(P)
    ys = [lib.gather_nd(p, [[1, 2], [0, 0]]), lib.gather_nd(p, [[1], [0]], name="rows"),
          lib.gather_nd(lib.constant([[[1, 2], [3, 4]]]), lib.constant([[[0, 1, 1]]],
                                                                       lib.int64)),
          lib.scatter_nd([[0], [2], [0]], [5, 6, 7], [4]),
          lib.scatter_nd(lib.constant([[1, 0]], lib.int64), [[1.5, 2.5]], [2, 2, 2])]
    return ys


def test_values_types_names_and_shapes_match_tf():
    assert_built_as_tf(_build, tf)


def test_gradients_match_tf():
    def grads(lib):
        with lib.Graph().as_default():
            p, u = lib.constant(P), lib.constant([1.0, 2.0, 3.0])
            y = lib.gather_nd(p * p, [[1, 2], [0, 0], [1, 2]]) * lib.constant([1.0, 2.0, 3.0])
            z = lib.scatter_nd([[0], [2], [0]], u * u, [4]) * lib.constant([1.0, 2, 3, 4])
            with lib.Session() as session:
                return session.run(lib.gradients(lib.reduce_sum(y) + lib.reduce_sum(z),
                                                 [p, u]))

    for e, g in zip(grads(tf1), grads(tf), strict=True):
        np.testing.assert_allclose(g, e)


def test_an_index_out_of_range_fails_as_in_tf():
    def failure(lib):
        with lib.Graph().as_default():
            y = lib.gather_nd(lib.constant(P), [[0, 1], [1, 3]])
            with lib.Session() as session, pytest.raises(lib.errors.InvalidArgumentError) as e:
                session.run(y)
        return e.value.message

    assert failure(tf).splitlines()[0] in failure(tf1)
