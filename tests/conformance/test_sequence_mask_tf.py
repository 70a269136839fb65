"""``tf.sequence_mask`` against TensorFlow: values with and without ``maxlen``, 2-D
lengths, dtypes, the final op's type and name, and the static shape."""
import pytest
from tf_oracle import assert_built_as_tf

import tfteach as tf

pytestmark = pytest.mark.conformance


def _build(lib):
    ys = [lib.sequence_mask([1, 3, 0]), lib.sequence_mask([2, 4], 5, dtype=lib.float32),
          lib.sequence_mask(lib.constant([[1, 2], [0, 3]], lib.int64), name="grid"),
          lib.sequence_mask([3], maxlen=lib.constant(2), dtype=lib.int32)]
    return ys


def test_values_names_dtypes_and_shapes_match_tf():
    assert_built_as_tf(_build, tf)
