"""Op constructors: shapes and dtypes at construction, and TF's construction errors."""
import numpy as np
import pytest

import tfteach as tf


def test_matmul_shape_error_is_tf_text():
    a = tf.zeros([2, 3])
    b = tf.zeros([4, 2])
    with pytest.raises(ValueError) as e:
        tf.matmul(a, b)
    assert str(e.value) == ("Dimensions must be equal, but are 3 and 4 for 'MatMul' (op: "
                            "'MatMul') with input shapes: [2,3], [4,2].")


def test_matmul_transposes_shape():
    a = tf.zeros([3, 2])
    b = tf.zeros([4, 3])
    assert tf.matmul(a, b, transpose_a=True, transpose_b=True).shape.as_list() == [2, 4]


def test_no_implicit_promotion():
    a = tf.constant(1.0)
    b = tf.constant(1)
    with pytest.raises(TypeError, match="Input 'y' of 'Add' Op has type int32 that does not "
                                        "match type float32 of argument 'x'"):
        tf.add(a, b)


def test_python_number_adopts_tensor_dtype():
    a = tf.constant(1, dtype=tf.int64)
    assert (a + 2).dtype is tf.int64
    f = tf.constant(1.0, dtype=tf.float64)
    assert (2 * f).dtype is tf.float64


def test_lossy_python_number_is_a_type_error():
    with pytest.raises(TypeError, match="Expected int32, got 2.5"):
        tf.constant(1) + 2.5


def test_broadcasting_shapes_and_errors():
    a = tf.zeros([4, 1, 3])
    b = tf.zeros([2, 1])
    assert (a + b).shape.as_list() == [4, 2, 3]
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4"):
        tf.zeros([2, 3]) + tf.zeros([2, 4])


def test_constant_shape_broadcasting_as_seeds():
    sess = tf.Session()
    assert sess.run(tf.constant(-1.0, shape=[2, 3])).tolist() == [[-1.0] * 3] * 2
    assert sess.run(tf.constant([1, 2, 3, 4, 5, 6], shape=[2, 3])).tolist() == [[1, 2, 3], [4, 5, 6]]


def test_reductions_and_shape_inference():
    x = tf.placeholder(tf.float32, [None, 5])
    assert tf.reduce_sum(x, axis=1).shape.as_list() == [None]
    assert tf.reduce_mean(x).shape.as_list() == []
    assert tf.reduce_max(x, 0, keepdims=True).shape.as_list() == [1, 5]
    assert tf.argmax(x, 1).dtype is tf.int64
    assert tf.equal(x, x).dtype is tf.bool


def test_reshape_and_errors():
    x = tf.zeros([2, 6])
    assert tf.reshape(x, [3, -1]).shape.as_list() == [3, 4]
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 12 elements"):
        tf.reshape(x, [5, 2])


def test_reshape_of_a_fed_value_that_does_not_fit_is_invalid_argument():
    x = tf.placeholder(tf.float32, [None, 3])
    flat = tf.reshape(x, [4])
    rows = tf.reshape(x, [-1, 4])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"tensor with 6 values, but the requested shape has 4"
                                 r"[\s\S]*Reshape[\s\S]*Hint:"):
            sess.run(flat, {x: [[1, 2, 3], [4, 5, 6]]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="requires a multiple of 4"):
            sess.run(rows, {x: [[1, 2, 3], [4, 5, 6]]})
        assert sess.run(rows, {x: [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 2, 3]]}).shape == (3, 4)


def test_concat_split_transpose_shapes():
    a, b = tf.zeros([2, 3]), tf.zeros([2, 5])
    assert tf.concat([a, b], 1).shape.as_list() == [2, 8]
    parts = tf.split(tf.zeros([4, 6]), 3, axis=1)
    assert [p.shape.as_list() for p in parts] == [[4, 2]] * 3
    assert tf.transpose(tf.zeros([2, 3, 4])).shape.as_list() == [4, 3, 2]


def test_cast_changes_dtype():
    assert tf.cast(tf.constant([1, 2]), tf.float32).dtype is tf.float32


def test_placeholder_unknown_shape():
    p = tf.placeholder(tf.float32)
    assert str(p.shape) == "<unknown>"
