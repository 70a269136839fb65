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


def train_once(lib, build, x_value, learning_rate, weights=None):
    """In a fresh graph of ``lib``: ``build(lib, x)`` -> tensors for a placeholder ``x``
    (batch dimension unknown); the variables start at ``weights`` (default: ``lib``'s own
    initial values) and one gradient-descent step lowers ``sum(y * y)``. Returns each
    tensor's (op type, name, static shape), the variables' (name, shape), the starting
    weights, and the values before the step plus the loss after it."""
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float32, [None] + list(x_value.shape[1:]))
        ys = build(lib, x)
        variables = lib.trainable_variables()
        loss = sum(lib.reduce_sum(y * y) for y in ys)
        step = lib.train.GradientDescentOptimizer(learning_rate).minimize(loss)
        with lib.Session() as session:
            session.run(lib.global_variables_initializer())
            if weights is None:
                weights = session.run(variables)
            for v, w in zip(variables, weights, strict=True):
                session.run(v.assign(w))
            values = session.run(ys + [loss], {x: x_value})
            session.run(step, {x: x_value})
            values.append(session.run(loss, {x: x_value}))
        described = [(y.op.type, y.name, y.shape.as_list()) for y in ys]
        return described, [(v.op.name, v.shape.as_list()) for v in variables], weights, values


def error_class(lib, build):
    """The class name of the error that building ``build(lib)`` in a fresh graph and running
    what it returns raises ("no error" when both succeed)."""
    with lib.Graph().as_default():
        try:
            y = build(lib)
            with lib.Session() as session:
                session.run(y)
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            return type(e).__name__
    return "no error"
