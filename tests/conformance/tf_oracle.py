"""Real TensorFlow's ``compat.v1`` in graph mode, the oracle of the conformance tests.

``from tf_oracle import tf1`` skips the importing test module where TensorFlow is not
installed (``pip install -e '.[conformance]'``)."""
import numpy as np
import pytest

tf_real = pytest.importorskip("tensorflow", reason="TensorFlow is not installed "
                              "(pip install -e '.[conformance]')")
tf1 = tf_real.compat.v1
tf1.disable_v2_behavior()


def run_described(lib, build):
    """In a fresh graph of ``lib``, ``build(lib)`` -> tensors; returns each tensor's
    (op type, name, dtype, static shape) and the values one run gives."""
    with lib.Graph().as_default():
        ys = build(lib)
        with lib.Session() as session:
            values = session.run(ys)
        return [(y.op.type, y.name, y.dtype.name, y.shape.as_list()) for y in ys], values


def assert_built_as_tf(build, tfteach, rtol=0.0):
    """``build`` gives the same op types, names, dtypes, static shapes and values (within
    ``rtol``) on tfteach as on TensorFlow."""
    (expected_ops, expected), (got_ops, got) = (run_described(tf1, build),
                                                run_described(tfteach, build))
    assert got_ops == expected_ops
    for e, g in zip(expected, got, strict=True):
        assert g.dtype == e.dtype
        if rtol:
            np.testing.assert_allclose(g, e, rtol=rtol)
        else:
            np.testing.assert_array_equal(g, e)
