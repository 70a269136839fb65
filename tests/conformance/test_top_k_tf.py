"""``tf.nn.top_k`` (TopKV2) and ``tf.nn.in_top_k`` (InTopKV2) against TensorFlow: values,
indices and ties, op types and names, shapes and dtypes, TopKV2's gradient, and the errors
of a too large k and of a scalar input."""
import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

X = [[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0], [-1.0, 4.0, 0.5, 4.0]]


def _build(lib):
    x = lib.constant(X)
    v, i = lib.nn.top_k(x, 2)
    v3, i3 = lib.nn.top_k(lib.constant([[[2, 7, 7], [1, 0, 1]]]), k=3, name="three")
    hit = lib.nn.in_top_k(x, [1, 3, 1], 2)
    hit1 = lib.nn.in_top_k(x, lib.constant([0, 2, 2], lib.int64), 1, name="first")
    ys = [v, i, v3, i3, hit, hit1]
    return ys


def test_values_ties_types_names_and_shapes_match_tf():
    assert_built_as_tf(_build, tf)


def test_top_k_gradient_matches_tf():
    def grads(lib):
        with lib.Graph().as_default():
            x = lib.constant([[[1.0, 3.0, 3.0, 2.0]], [[0.0, -2.0, 6.0, 1.0]]])
            v, _ = lib.nn.top_k(x * x, 3)
            with lib.Session() as session:
                return session.run(lib.gradients(lib.reduce_sum(v * lib.constant(
                    [1.0, 2.0, 3.0])), [x]))

    np.testing.assert_allclose(grads(tf)[0], grads(tf1)[0])


@pytest.mark.parametrize("value,k", [(X, 5), (1.0, 1)])
def test_shape_errors_match_tf(value, k):
    def failure(lib):
        with lib.Graph().as_default(), pytest.raises(ValueError) as info:
            lib.nn.top_k(lib.constant(value), k)
        return str(info.value)

    assert failure(tf).split(" for ")[0] == failure(tf1).split(" for ")[0]


def test_a_too_large_fed_k_fails_at_run_time_as_in_tf():
    def failure(lib):
        with lib.Graph().as_default():
            k = lib.placeholder(lib.int32, [])
            v, _ = lib.nn.top_k(lib.constant(X), k)
            with lib.Session() as session, pytest.raises(lib.errors.InvalidArgumentError) as e:
                session.run(v, {k: 6})
        return e.value.message

    assert failure(tf).splitlines()[0] in failure(tf1)
