"""``tf.fill``, ``tf.zeros``, ``tf.ones`` and ``tf.reshape`` with a shape that mixes Python
ints and scalar tensors (``[tf.shape(x)[0], 3]``) against TensorFlow: the list is packed as
TF packs it (a ``Pack`` of ``Const``s named by index, int64 items cast), with TF's op names
and types, static shapes, dtypes and values."""
import re

import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance


def _build(lib):
    x = lib.placeholder(lib.float32, [None, 4], name="x")
    n = lib.shape(x)[0]
    ys = [lib.fill([2, 3], 7), lib.fill([n, 3], 7), lib.fill(lib.shape(x), 1.5),
          lib.fill([lib.constant(2), lib.constant(3)], 0.5), lib.zeros([n, 3]),
          lib.ones((2, n), lib.int32), lib.zeros(lib.shape(x)),
          lib.ones([lib.constant(2, lib.int64), 3]), lib.reshape(x, [n, 2, -1]),
          lib.fill([n, [2, 3][0]], 1.0)]
    return x, ys


def _run(lib):
    with lib.Graph().as_default() as g:
        x, ys = _build(lib)
        with lib.Session() as session:
            values = session.run(ys, {x: np.arange(8, dtype=np.float32).reshape(2, 4)})
        ops = [(op.name, op.type) for op in g.get_operations()]
        return ops, [(y.dtype.name, y.shape.as_list()) for y in ys], values


def test_packed_shapes_build_and_run_as_in_tf():
    expected, got = _run(tf1), _run(tf)
    assert got[0] == expected[0], "op names and types"
    assert got[1] == expected[1], "dtypes and static shapes"
    assert [(v.dtype, v.tolist()) for v in got[2]] == [(v.dtype, v.tolist())
                                                       for v in expected[2]]


def test_convert_to_tensor_packs_a_list_holding_a_tensor():
    def packed(lib):
        with lib.Graph().as_default():
            t = lib.convert_to_tensor([[lib.constant(1.0), 2.0], [3.0, 4.0]])
            with lib.Session() as session:
                return t.op.type, t.op.name, t.shape.as_list(), session.run(t)

    e, g = packed(tf1), packed(tf)
    assert g[:3] == e[:3]
    np.testing.assert_array_equal(g[3], e[3])


def test_a_list_of_tensors_of_two_dtypes_is_a_type_error_as_in_tf():
    for lib in (tf1, tf):
        with lib.Graph().as_default(), pytest.raises(TypeError, match=re.escape(
                "Cannot convert a list containing a tensor of dtype <dtype: 'int64'> to "
                "<dtype: 'int32'> (Tensor is: <tf.Tensor 'Const_1:0' shape=() dtype=int64>)")):
            lib.fill([lib.constant(2), lib.constant(3, lib.int64)], 1.0)
