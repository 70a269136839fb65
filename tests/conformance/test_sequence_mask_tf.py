"""``tf.sequence_mask`` against TensorFlow: values with and without ``maxlen``, 2-D
lengths, dtypes, the final op's type and name, and the static shape."""
import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance


def _run(lib):
    with lib.Graph().as_default():
        ys = [lib.sequence_mask([1, 3, 0]), lib.sequence_mask([2, 4], 5, dtype=lib.float32),
              lib.sequence_mask(lib.constant([[1, 2], [0, 3]], lib.int64), name="grid"),
              lib.sequence_mask([3], maxlen=lib.constant(2), dtype=lib.int32)]
        with lib.Session() as session:
            values = session.run(ys)
        return [(y.op.type, y.name, y.dtype.name, y.shape.as_list()) for y in ys], values


def test_values_names_dtypes_and_shapes_match_tf():
    (expected_ops, expected), (got_ops, got) = _run(tf1), _run(tf)
    assert got_ops == expected_ops
    for e, g in zip(expected, got, strict=True):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)
