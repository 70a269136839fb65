"""Convolutional nets against TensorFlow's compat.v1: ``tf.nn.conv2d``, ``max_pool``,
``avg_pool``, ``lrn``, ``fused_batch_norm``, ``zero_fraction`` and ``tf.layers``' conv,
pooling, dropout and batch-normalisation layers give TF's values, gradients, op types,
attrs and static shapes; a tiny CNN trained from the same weights gives TF's losses.

Runs only where TensorFlow is installed. The ``tf.layers`` graph comparison also needs
``tf_keras`` (TF 2.16+ serves its ``tf.compat.v1.layers`` from it) and skips without it.
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

RNG = np.random.default_rng(3)
X = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
FILTER = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)
SCALE = np.array([0.5, -1.0, 2.0], np.float32)
OFFSET = np.array([0.1, 0.2, -0.3], np.float32)
MEAN = np.array([0.0, 0.5, -0.5], np.float32)
VAR = np.array([1.0, 2.0, 0.5], np.float32)
IMAGES = RNG.standard_normal((3, 8, 8, 3)).astype(np.float32)

CASES = {
    "conv-same-s1": lambda tf, x: tf.nn.conv2d(x, FILTER, strides=[1, 1, 1, 1], padding="SAME"),
    "conv-valid-s2": lambda tf, x: tf.nn.conv2d(x, FILTER, strides=[1, 2, 2, 1],
                                                padding="VALID"),
    "conv-same-s32": lambda tf, x: tf.nn.conv2d(x, FILTER, strides=[1, 3, 2, 1],
                                                padding="SAME"),
    "conv-valid-dilated": lambda tf, x: tf.nn.conv2d(x, FILTER, strides=[1, 1, 1, 1],
                                                     padding="VALID", dilations=[1, 2, 2, 1]),
    "max-valid": lambda tf, x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID"),
    "max-same": lambda tf, x: tf.nn.max_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
    "avg-valid": lambda tf, x: tf.nn.avg_pool(x, [1, 2, 3, 1], [1, 3, 1, 1], "VALID"),
    "avg-same": lambda tf, x: tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME"),
    "lrn": lambda tf, x: tf.nn.lrn(x, 1, bias=1.0, alpha=0.3, beta=0.75, name="norm1"),
    "bn-train": lambda tf, x: tf.nn.fused_batch_norm(x, SCALE, OFFSET, MEAN, VAR,
                                                     is_training=True)[0],
    "bn-infer": lambda tf, x: tf.nn.fused_batch_norm(x, SCALE, OFFSET, MEAN, VAR,
                                                     is_training=False)[0],
}
GRAD_TYPES = {"conv": {"Conv2DBackpropInput", "Conv2DBackpropFilter"}, "max": {"MaxPoolGrad"},
              "avg": {"AvgPoolGrad"}, "lrn": {"LRNGrad"}, "bn": {"FusedBatchNormGradV3"}}
ATTRS = ("strides", "padding", "data_format", "dilations", "ksize", "depth_radius", "bias",
         "alpha", "beta", "epsilon", "is_training")


def _build_and_run(mod, case: str, batch=None):
    with mod.Graph().as_default() as g:
        x = mod.placeholder(mod.float32, [batch, 7, 6, 3], name="x")
        y = CASES[case](mod, x)
        cot = np.random.default_rng(1).standard_normal((2, *y.shape.as_list()[1:]))
        (dx,) = mod.gradients(mod.reduce_sum(y * cot.astype(np.float32)), [x])
        with mod.Session() as sess:
            values = sess.run([y, dx], {x: X})
        grad_types = {op.type for op in g.get_operations()} & set().union(*GRAD_TYPES.values())
        attrs = {k: y.op.get_attr(k) for k in ATTRS if k in y.op.node_def.attr} \
            if mod is tf1 else {k: y.op.get_attr(k) for k in ATTRS if k in y.op.attrs}
        return y.op.type, y.op.name, y.shape.as_list(), attrs, grad_types, values


def _plain(value):
    """An attr value as comparable data (TF's strings are bytes, its floats float32)."""
    if isinstance(value, bytes):
        return value.decode()
    return float(np.float32(value)) if isinstance(value, float) else value


@pytest.mark.parametrize("batch", [None, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_op_matches_tensorflow(case, batch):
    ours = _build_and_run(tfteach, case, batch)
    theirs = _build_and_run(tf1, case, batch)
    assert ours[:3] == theirs[:3]
    assert {k: _plain(v) for k, v in ours[3].items()} == \
        {k: _plain(v) for k, v in theirs[3].items()}
    assert ours[4] == theirs[4] == GRAD_TYPES[case.split("-")[0]]
    for a, b in zip(ours[5], theirs[5], strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_filter_gradient_and_fused_batch_norm_outputs_match_tensorflow():
    def run(mod):
        with mod.Graph().as_default():
            x = mod.constant(X)
            w = mod.constant(FILTER)
            y = mod.nn.conv2d(x, w, strides=[1, 2, 1, 1], padding="SAME")
            bn = mod.nn.fused_batch_norm(y, mod.ones([4]), mod.zeros([4]), is_training=True)
            grads = mod.gradients(mod.reduce_sum(bn[0] * y), [w])
            with mod.Session() as sess:
                return sess.run([bn[1], bn[2], *grads]), [t.shape.as_list() for t in bn]
    (ours, our_shapes), (theirs, their_shapes) = run(tfteach), run(tf1)
    assert our_shapes == their_shapes
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_zero_fraction_matches_tensorflow():
    def run(mod):
        with mod.Graph().as_default():
            fraction = mod.nn.zero_fraction(mod.nn.relu(mod.constant(X)))
            with mod.Session() as sess:
                return sess.run(fraction), fraction.op.name, fraction.dtype.name
    assert run(tfteach) == run(tf1)


@pytest.mark.parametrize("case", ["conv", "max", "avg"])
def test_nchw_on_the_cpu_runs_as_tensorflow_compat_v1_does(case):
    """TF 1.x's CPU kernels refused NCHW; TF 2.x's graph mode transposes it, as tfteach."""
    def run(mod):
        with mod.Graph().as_default(), mod.device("/cpu:0"):
            x = mod.constant(np.transpose(X, (0, 3, 1, 2)))
            if case == "conv":
                y = mod.nn.conv2d(x, FILTER, [1, 1, 2, 1], "SAME", data_format="NCHW")
            else:
                pool = mod.nn.max_pool if case == "max" else mod.nn.avg_pool
                y = pool(x, [1, 1, 2, 2], [1, 1, 2, 2], "SAME", data_format="NCHW")
            (dx,) = mod.gradients(mod.reduce_sum(y * y), [x])
            with mod.Session() as sess:
                return y.shape.as_list(), sess.run([y, dx])
    (our_shape, ours), (their_shape, theirs) = run(tfteach), run(tf1)
    assert our_shape == their_shape
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def _tiny_cnn(mod, weights: dict, layers: bool):
    """conv -> relu -> max_pool -> dense -> softmax cross-entropy, SGD on the given weights:
    tfteach with tf.layers (weights loaded into its variables), TF with tf.nn ops."""
    x = mod.placeholder(mod.float32, [None, 8, 8, 3])
    labels = mod.placeholder(mod.int64, [None])
    if layers:
        h = mod.layers.conv2d(x, 4, 3, padding="same", activation=mod.nn.relu)
        h = mod.layers.max_pooling2d(h, 2, 2)
        logits = mod.layers.dense(mod.layers.flatten(h), 5)
    else:
        w = {k: mod.Variable(v, name=k.replace("/", "_")) for k, v in weights.items()}
        h = mod.nn.relu(mod.nn.bias_add(mod.nn.conv2d(x, w["conv2d/kernel"], [1, 1, 1, 1],
                                                      "SAME"), w["conv2d/bias"]))
        h = mod.nn.max_pool(h, [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        flat = mod.reshape(h, [-1, 64])
        logits = mod.matmul(flat, w["dense/kernel"]) + w["dense/bias"]
    loss = mod.reduce_mean(mod.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                           logits=logits))
    train = mod.train.GradientDescentOptimizer(0.5).minimize(loss)
    return x, labels, loss, train


def test_tiny_cnn_trains_as_on_tensorflow():
    rng = np.random.default_rng(5)
    data = rng.standard_normal((6, 8, 8, 3)).astype(np.float32)
    labels = rng.integers(0, 5, 6)
    with tfteach.Graph().as_default():
        tfteach.set_random_seed(7)      # initial weights that train down, run after run
        x, y, loss, train = _tiny_cnn(tfteach, {}, layers=True)
        names = [v.op.name for v in tfteach.trainable_variables()]
        with tfteach.Session() as sess:
            sess.run(tfteach.global_variables_initializer())
            weights = dict(zip(names, sess.run(tfteach.trainable_variables()), strict=True))
            ours = [sess.run([loss, train], {x: data, y: labels})[0] for _ in range(4)]
    assert names == ["conv2d/kernel", "conv2d/bias", "dense/kernel", "dense/bias"]
    with tf1.Graph().as_default():
        x, y, loss, train = _tiny_cnn(tf1, weights, layers=False)
        with tf1.Session() as sess:
            sess.run(tf1.global_variables_initializer())
            theirs = [sess.run([loss, train], {x: data, y: labels})[0] for _ in range(4)]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4)
    assert ours[-1] < ours[0]


def _legacy_layers():
    pytest.importorskip("tf_keras", reason="tf.compat.v1.layers needs tf_keras on TF 2.16+")
    return importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")


def _layer_graph(mod, layers):
    x = mod.placeholder(mod.float32, [None, 8, 8, 3], name="x")
    h = layers.conv2d(x, 4, 3, padding="same", activation=mod.nn.relu)
    h = layers.conv2d(h, 5, (3, 2), strides=2, name="conv_b")
    h = layers.average_pooling2d(layers.max_pooling2d(h, 2, 1), 2, 1, padding="same")
    h = layers.batch_normalization(h, training=True)
    h = layers.dropout(h, 0.5, training=False)
    out = layers.batch_normalization(layers.dense(layers.flatten(h), 6), training=True)
    infer = layers.batch_normalization(h, training=False, name="batch_normalization",
                                       reuse=True)
    return x, out, infer


def test_tf_layers_build_tensorflows_variables_ops_and_values():
    legacy = _legacy_layers()
    graphs = {}
    for mod, layers in ((tfteach, tfteach.layers), (tf1, legacy)):
        with mod.Graph().as_default() as g:
            x, out, infer = _layer_graph(mod, layers)
            loss = mod.reduce_sum(out * out) + mod.reduce_sum(infer)
            grads = mod.gradients(loss, mod.trainable_variables())
            update = mod.get_collection(mod.GraphKeys.UPDATE_OPS)
            ops = {(op.name, op.type) for op in g.get_operations()
                   if op.type in {"Conv2D", "BiasAdd", "Relu", "MaxPool", "AvgPool",
                                  "FusedBatchNormV3", "AssignSub", "VariableV2", "Identity"}
                   and "Initializer" not in op.name}
            graphs[mod] = (g, x, [loss, *grads], update, [op.name for op in update], ops,
                           [v.name for v in mod.global_variables()],
                           [v.name for v in mod.trainable_variables()])
    ours, theirs = graphs[tfteach], graphs[tf1]
    assert ours[4:] == theirs[4:]
    with tfteach.Session(graph=ours[0]) as sess:
        with ours[0].as_default():
            sess.run(tfteach.global_variables_initializer())
            start = {v.name: sess.run(v) for v in tfteach.global_variables()}
            ours_values = sess.run(ours[2], {ours[1]: IMAGES})
            sess.run(ours[3], {ours[1]: IMAGES})
            ours_moved = {v.name: sess.run(v) for v in tfteach.global_variables()}
    with tf1.Session(graph=theirs[0]) as sess:
        with theirs[0].as_default():
            for v in tf1.global_variables():
                v.load(start[v.name], sess)
            theirs_values = sess.run(theirs[2], {theirs[1]: IMAGES})
            sess.run(theirs[3], {theirs[1]: IMAGES})
            theirs_moved = {v.name: sess.run(v) for v in tf1.global_variables()}
    for a, b in zip(ours_values, theirs_values, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    for name, value in ours_moved.items():
        np.testing.assert_allclose(value, theirs_moved[name], rtol=1e-5, atol=1e-6)
