"""``tf.reduce_all``, ``tf.reduce_any``, ``tf.count_nonzero``, ``tf.is_nan``, ``tf.is_inf``
and ``tf.is_finite`` against TensorFlow: values, op types, default names, dtypes and static
shapes, no gradient through them, and TF's TypeError for a wrong input dtype."""
import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1

import tfteach as tf

pytestmark = pytest.mark.conformance


def _build(lib):
    b = lib.constant([[True, False, True], [True, True, True]])
    x = lib.constant([[0.0, 2.5, 0.0], [-1.0, 0.0, 3.0]])
    f = lib.constant([np.nan, np.inf, -np.inf, 1.0, 0.0], lib.float64)
    return [lib.reduce_all(b), lib.reduce_any(b), lib.reduce_all(b, axis=1),
            lib.reduce_any(b, 0, keepdims=True), lib.reduce_all(b, reduction_indices=[0, 1]),
            lib.reduce_any(lib.logical_not(b), axis=-1, name="nope"),
            lib.count_nonzero(x), lib.count_nonzero(x, axis=0),
            lib.count_nonzero(x, 1, keepdims=True, dtype=lib.int32),
            lib.count_nonzero(lib.constant([0, 3, 0, 7])),
            lib.is_nan(f), lib.is_inf(f), lib.is_finite(f), lib.is_nan(x, name="bad")]


def test_values_types_names_dtypes_and_shapes_match_tf():
    assert_built_as_tf(_build, tf)


def test_no_gradient_flows_through_them_as_in_tf():
    def grads(lib):
        with lib.Graph().as_default():
            x = lib.constant([1.0, np.nan, 0.0])
            y = lib.cast(lib.reduce_any(lib.is_nan(x)), lib.float32) + lib.cast(
                lib.count_nonzero(x), lib.float32)
            return lib.gradients(y, [x])

    assert grads(tf1) == [None] and grads(tf) == [None]


@pytest.mark.parametrize("make,value", [("reduce_all", [1.0]), ("reduce_any", [1]),
                                        ("is_nan", [1]), ("is_finite", [True])])
def test_a_wrong_dtype_is_tf_type_error(make, value):
    def failure(lib):
        with lib.Graph().as_default(), pytest.raises(TypeError) as info:
            getattr(lib, make)(lib.constant(value))
        return str(info.value)

    assert failure(tf) in failure(tf1)
