"""Every TF dtype name (``tf.uint8`` ... ``tf.qint32``) with TF's properties, and casts and
basic kernels on the ones NumPy computes with, compared with TensorFlow's ``compat.v1``."""
import numpy as np
import pytest

import tfteach
from tf_oracle import tf1

pytestmark = pytest.mark.conformance
NAMES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
         "uint32", "uint64", "bool", "string", "complex64", "complex128", "bfloat16", "qint8",
         "quint8", "qint16", "quint16", "qint32"]
PROPS = ["name", "is_integer", "is_floating", "is_complex", "is_quantized", "is_unsigned",
         "size", "as_datatype_enum"]


def _limits(dtype):
    try:
        return float(dtype.min), float(dtype.max)
    except TypeError:
        return "TypeError"


def _facts(tf, name):
    d = getattr(tf, name)
    return ([getattr(d, p) for p in PROPS], repr(d), _limits(d), np.dtype(d.as_numpy_dtype),
            tf.as_dtype(name) is d, tf.as_dtype(d.as_datatype_enum) is d)


@pytest.mark.parametrize("name", NAMES)
def test_dtype_has_tfs_properties(name):
    assert _facts(tfteach, name) == _facts(tf1, name)


@pytest.mark.parametrize("np_type", [np.uint8, np.int8, np.int16, np.uint16, np.uint32,
                                     np.uint64, np.complex64, np.complex128])
def test_as_dtype_of_a_numpy_type(np_type):
    assert tfteach.as_dtype(np_type).name == tf1.as_dtype(np_type).name


def _casts(tf):
    with tf.Graph().as_default():
        x = tf.constant([1.7, 200.0, 3.0])
        small = tf.constant(np.array([1, 2, 250], np.uint8))
        out = [tf.cast(x, t) for t in (tf.uint8, tf.int8, tf.int16, tf.uint16, tf.uint32,
                                       tf.uint64, tf.complex64, tf.complex128)]
        out += [small + tf.constant(np.array([3, 4, 5], np.uint8)),
                tf.cast(tf.cast(x, tf.uint8), tf.float32), tf.reduce_sum(tf.cast(x, tf.int16))]
        with tf.Session() as sess:
            return sess.run(out)


def test_casts_and_kernels_on_small_integer_and_complex_types():
    ours, theirs = _casts(tfteach), _casts(tf1)
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b), (a, b)
