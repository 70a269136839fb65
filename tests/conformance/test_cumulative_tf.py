"""``tf.cumsum`` and ``tf.cumprod`` against TensorFlow: values with ``exclusive`` and
``reverse`` on several axes and dtypes, op types and names, and both gradients."""
import itertools

import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

FLAGS = list(itertools.product([False, True], repeat=2))


def _build(lib):
    x = lib.constant([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    n = lib.constant([[1, 2, 3, 4]], lib.int64)
    ys = [f(x, axis, exclusive=e, reverse=r) for f in (lib.cumsum, lib.cumprod)
          for axis in (0, 1, -1) for e, r in FLAGS]
    ys += [lib.cumsum(n, 1, name="ints"), lib.cumprod(n, axis=1, exclusive=True)]
    return ys


def test_values_types_names_and_shapes_match_tf():
    assert_built_as_tf(_build, tf, rtol=1e-6)


@pytest.mark.parametrize("exclusive,reverse", FLAGS)
def test_gradients_match_tf(exclusive, reverse):
    def grads(lib):
        with lib.Graph().as_default():
            x = lib.constant([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
            w = lib.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
            y = lib.cumsum(x * x, 1, exclusive, reverse) + lib.cumprod(x, 0, exclusive, reverse)
            with lib.Session() as session:
                return session.run(lib.gradients(lib.reduce_sum(y * w), [x]))[0]

    np.testing.assert_allclose(grads(tf), grads(tf1), rtol=1e-6)
