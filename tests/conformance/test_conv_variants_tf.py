"""``tf.nn.conv2d_transpose``, ``conv1d``, ``depthwise_conv2d``, ``separable_conv2d``,
``tf.shape_n`` and ``tf.layers.conv2d_transpose`` / ``separable_conv2d`` against TensorFlow:
op types, names, static shapes, values, gradients for inputs and filters, variable names,
one training step from the same weights, and GraphDefs crossing both ways. The layer comparison needs ``tf_keras`` (TF 2.16+ serves
``tf.compat.v1.layers`` from it) and skips without it."""
import importlib

import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1, train_once

import tfteach as tf

pytestmark = pytest.mark.conformance

R = np.random.RandomState(0)
X = R.randn(2, 5, 6, 3).astype(np.float32)
DW = R.randn(3, 2, 3, 2).astype(np.float32)       # depthwise: [kh, kw, in, multiplier]
PW = R.randn(1, 1, 6, 4).astype(np.float32)       # pointwise: [1, 1, in * multiplier, out]
T = R.randn(3, 3, 4, 3).astype(np.float32)        # transpose: [kh, kw, out, in]
X1 = R.randn(2, 7, 3).astype(np.float32)
F1 = R.randn(3, 3, 5).astype(np.float32)


def _convs(lib, x=None, filters=None):
    x = lib.constant(X) if x is None else x
    dw, pw, t, f1 = filters or (DW, PW, T, F1)
    return [lib.nn.depthwise_conv2d(x, dw, [1, 1, 1, 1], "SAME"),
            lib.nn.depthwise_conv2d(x, dw, [1, 2, 2, 1], "VALID"),
            lib.nn.separable_conv2d(x, dw, pw, [1, 1, 1, 1], "SAME"),
            lib.nn.conv2d_transpose(x, t, [2, 10, 12, 4], [1, 2, 2, 1], "SAME"),
            lib.nn.conv2d_transpose(x, t, [2, 7, 8, 4], [1, 1, 1, 1], "VALID"),
            lib.nn.conv1d(lib.constant(X1), f1, 2, "SAME"),
            lib.nn.conv1d(lib.constant(X1), f1, 1, "VALID", data_format="NWC")]


def test_values_types_names_and_shapes_match_tf():
    assert_built_as_tf(_convs, tf, rtol=1e-4)


def test_gradients_for_inputs_and_filters_match_tf():
    def grads(lib):
        with lib.Graph().as_default():
            x = lib.constant(X)
            filters = [lib.constant(v) for v in (DW, PW, T, F1)]
            ys = _convs(lib, x, filters)
            loss = sum(lib.reduce_sum(lib.sin(y)) for y in ys)
            with lib.Session() as session:
                return session.run(lib.gradients(loss, [x] + filters))

    for got, want in zip(grads(tf), grads(tf1), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_transpose_channel_mismatch_is_a_value_error_as_in_tf():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="filter's input channels"):
        tf.nn.conv2d_transpose(tf.constant(X), R.randn(3, 3, 4, 2).astype(np.float32),
                               [2, 10, 12, 4], [1, 2, 2, 1])


def _layers(lib, layers, x):
    return [layers.conv2d_transpose(x, 4, 3, strides=2, padding="same", activation=lib.nn.relu),
            layers.conv2d_transpose(x, 2, (2, 3), padding="valid"),
            layers.separable_conv2d(x, 5, 3, padding="same", depth_multiplier=2)]


def test_layers_match_tf_names_values_and_a_training_step():
    pytest.importorskip("tf_keras", reason="tf.compat.v1.layers needs tf_keras on TF 2.16+")
    legacy = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    want_ops, want_vars, weights, want = train_once(
        tf1, lambda lib, x: _layers(lib, legacy, x), X, 0.01)
    got_ops, got_vars, _, got = train_once(
        tf, lambda lib, x: _layers(lib, tf.layers, x), X, 0.01, weights)
    assert got_ops == want_ops
    assert got_vars == want_vars
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)


def test_the_graphs_cross_to_and_from_tensorflow_as_graph_defs():
    """Conv2DBackpropInput, DepthwiseConv2dNative (and its gradient ops) and ReverseSequence
    in a GraphDef one runtime wrote compute the same values on the other."""
    def build(lib):
        x = lib.placeholder(lib.float32, [2, 5, 6, 3], name="x")
        ys = _convs(lib, x)[:5] + [lib.reverse_sequence(x, [2, 5], seq_axis=1, batch_axis=0)]
        grads = lib.gradients(sum(lib.reduce_sum(y * y) for y in ys), x)
        return [lib.identity(t, name=f"out_{k}") for k, t in enumerate(ys + grads)]

    def graph_def(lib):
        with lib.Graph().as_default() as g:
            outs = build(lib)
            return g.as_graph_def().SerializeToString(), [t.name for t in outs]

    def run(lib, serialized, names):
        with lib.Graph().as_default():
            lib.import_graph_def(lib.GraphDef.FromString(serialized), name="")
            with lib.Session() as session:
                return session.run(names, {"x:0": X})

    for source, target in ((tf, tf1), (tf1, tf)):
        serialized, names = graph_def(source)
        for got, want in zip(run(target, serialized, names), run(source, serialized, names),
                             strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_shape_n_matches_tf():
    assert_built_as_tf(lambda lib: lib.shape_n([lib.constant(X), lib.zeros([2, 0])],
                                               out_type=lib.int64), tf)
