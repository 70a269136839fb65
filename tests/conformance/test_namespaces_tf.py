"""tf.math, tf.random, tf.linalg and tf.debugging: each name tfteach has there builds the graph TF builds
(op types, names, dtypes, shapes, values), and a name TF has there that tfteach lacks says so."""
import pytest

import tfteach
from tf_oracle import assert_built_as_tf, tf1

pytestmark = pytest.mark.conformance

NAMESPACES = ("math", "random", "linalg", "debugging")


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_name_tfteach_exports_there_is_a_name_tf_has_there(namespace):
    names = getattr(tfteach, namespace).__all__
    assert names and [n for n in names if not hasattr(getattr(tf1, namespace), n)] == []


def test_math_names_are_the_top_level_functions():
    assert tfteach.math.exp is tfteach.exp and tfteach.math.cumsum is tfteach.cumsum
    assert tfteach.math.divide_no_nan is tfteach.div_no_nan


def test_math_functions_build_as_tf():
    assert_built_as_tf(lambda tf: [tf.math.reduce_sum(tf.math.square([[1., 2.], [3., 4.]]), 1),
                                   tf.math.cumprod([1, 2, 3], exclusive=True),
                                   tf.math.floormod(7, 3), tf.math.is_nan([0.0])], tfteach)


def _random_tensors(tf):
    tf.random.set_random_seed(1)
    return [tf.random.normal([2, 3]), tf.random.uniform([4], dtype=tf.float64),
            tf.random.truncated_normal([1]), tf.random.shuffle([1, 2, 3])]


def test_random_functions_give_tfs_dtypes_shapes_and_ranges():
    described = []
    for lib in (tf1, tfteach):
        with lib.Graph().as_default():
            ys = _random_tensors(lib)
            with lib.Session() as session:
                values = session.run(ys)
        described.append([(y.dtype.name, y.shape.as_list()) for y in ys])
        assert 0 <= values[1].min() and values[1].max() < 1 and abs(values[2][0]) <= 2
        assert sorted(values[3]) == [1, 2, 3]
    assert described[0] == described[1]


def test_debugging_names_are_the_top_level_functions():
    assert tfteach.debugging.assert_equal is tfteach.assert_equal
    assert tfteach.debugging.check_numerics is tfteach.check_numerics


def test_linalg_functions_build_as_tf():
    assert_built_as_tf(lambda tf: [tf.linalg.inv([[2., 0.], [0., 4.]]),
                                   tf.linalg.matmul([[1., 2.]], [[3.], [4.]]),
                                   tf.linalg.tensor_diag([1, 2]),
                                   tf.linalg.tensor_diag_part([[1, 2], [3, 4]])], tfteach)


@pytest.mark.parametrize("namespace,name", [("math", "segment_mean"), ("linalg", "qr"),
                                            ("debugging", "assert_near")])
def test_a_name_tf_has_there_and_tfteach_lacks_is_an_attribute_error_naming_it(namespace, name):
    assert hasattr(getattr(tf1, namespace), name)
    with pytest.raises(AttributeError, match=f"tfteach has no tf.{namespace}.{name}"):
        getattr(getattr(tfteach, namespace), name)
