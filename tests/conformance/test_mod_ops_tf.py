"""``%``, ``//``, ``tf.mod``, ``tf.floormod`` and ``tf.truncatemod`` against TensorFlow:
values with negative operands (ints and floats), op types and names, dtypes, the gradient
of FloorMod, and the errors of a bool operand and of an integer divisor of 0."""
import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance


def _build(lib):
    a, b = lib.constant([7, -7, 7, -7]), lib.constant([3, 3, -3, -3])
    fa = lib.constant([7.5, -7.5, 7.5, -7.5])
    fb = lib.constant([2.0, 2.0, -2.0, -2.0])
    return [a % b, a % 3, 10 % a, a // b, 10 // a, lib.mod(a, b), lib.floormod(fa, fb),
            lib.truncatemod(a, b), lib.truncatemod(fa, fb), fa % 0.0,
            lib.mod(lib.constant([5, -5], lib.int64), 2), lib.constant([200], lib.uint8) % 7]


def _run(lib):
    with lib.Graph().as_default():
        ys = _build(lib)
        with lib.Session() as session:
            values = session.run(ys)
        return [(y.op.type, y.op.name, y.dtype.name) for y in ys], values


def test_values_types_names_and_dtypes_match_tf():
    (expected_ops, expected), (got_ops, got) = _run(tf1), _run(tf)
    assert got_ops == expected_ops
    for e, g in zip(expected, got):
        assert g.dtype == e.dtype
        np.testing.assert_array_equal(g, e)


def test_floormod_gradient_matches_tf():
    def grads(lib):
        with lib.Graph().as_default():
            x, y = lib.constant([[5.5, -5.5, 2.0]]), lib.constant([2.0, -1.5, 0.75])
            with lib.Session() as session:
                return session.run(lib.gradients(lib.reduce_sum(3.0 * (x % y)), [x, y]))

    for e, g in zip(grads(tf1), grads(tf)):
        np.testing.assert_allclose(g, e)


@pytest.mark.parametrize("make", ["floormod", "floordiv", "truncatemod"])
def test_integer_division_by_zero_fails_as_in_tf(make):
    def failure(lib):
        with lib.Graph().as_default():
            y = getattr(lib, make)(lib.constant([4, 5]), lib.constant([2, 0]))
            with lib.Session() as session, pytest.raises(lib.errors.OpError) as info:
                session.run(y)
        return type(info.value).__name__, info.value.message

    (e_cls, e_msg), (g_cls, g_msg) = failure(tf1), failure(tf)
    assert g_cls == e_cls
    assert g_msg.splitlines()[0] in e_msg


def test_a_bool_operand_is_a_type_error_as_in_tf():
    for lib in (tf1, tf):
        with lib.Graph().as_default(), pytest.raises(TypeError, match="DataType bool not in "
                                                     "list of allowed values: int8, int16"):
            lib.constant([True]) % lib.constant([True])
