"""Entering a variable scope again names what it opens as TensorFlow does: leaving a named
scope forgets its sub-scopes' counts (so a model function called again with ``reuse=True``
finds its unnamed layers' variables: the ``conv_net(x, reuse)`` pattern of public TF 1.x
examples), and leaving a reopened ``VariableScope`` puts the counts back as they were.
The ``tf.layers`` case needs ``tf_keras`` (TF 2.16+ serves ``tf.compat.v1.layers`` from it)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance


def _scope_names(lib):
    names = []

    def block():
        with lib.variable_scope(None, default_name="block") as scope:
            names.append(scope.name)
            names.append(lib.get_variable("w", [1]).name)
    with lib.Graph().as_default():
        for reuse in (None, True):
            with lib.variable_scope("net", reuse=reuse):
                block()
                block()
        with lib.variable_scope("outer") as outer:
            block()
        with lib.variable_scope(outer, reuse=True):
            block()
            with lib.variable_scope(None, default_name="inner") as inner:
                names.append(inner.name)
        with lib.variable_scope("outer", reuse=True):
            block()
        with lib.variable_scope(None, default_name="block"):
            with lib.variable_scope(None, default_name="block") as scope:
                names.append(scope.name)
    return names


def test_scopes_opened_again_are_named_as_tf():
    assert _scope_names(tf) == _scope_names(tf1)


def _conv_net(lib, layers, x, reuse, is_training):
    with lib.variable_scope("ConvNet", reuse=reuse):
        h = layers.conv2d(lib.reshape(x, [-1, 6, 6, 1]), 3, 3, activation=lib.nn.relu)
        h = layers.max_pooling2d(h, 2, 2)
        h = layers.conv2d(h, 4, 2, activation=lib.nn.relu)
        h = layers.dense(layers.flatten(h), 5)
        h = layers.dropout(h, rate=0.5, training=is_training)
        return layers.dense(h, 2)


def _built(lib, layers):
    with lib.Graph().as_default() as g:
        x = lib.placeholder(lib.float32, [None, 36])
        train = _conv_net(lib, layers, x, reuse=False, is_training=True)
        test = _conv_net(lib, layers, x, reuse=True, is_training=False)
        names = [v.name for v in lib.global_variables()]
        convs = [op.name for op in g.get_operations() if op.type == "Conv2D"]
        return g, x, train, test, names, convs


def test_a_model_built_again_with_reuse_shares_its_unnamed_layers_as_tf():
    pytest.importorskip("tf_keras", reason="tf.compat.v1.layers needs tf_keras on TF 2.16+")
    legacy = importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.layers")
    ours, theirs = _built(tf, tf.layers), _built(tf1, legacy)
    assert ours[4:] == theirs[4:]
    assert len(ours[4]) == 8
    data = np.linspace(-1.0, 1.0, 72, dtype=np.float32).reshape(2, 36)
    with tf.Session(graph=ours[0]) as sess:
        sess.run(tf.variables_initializer(ours[0].get_collection("variables")))
        weights = {v.name: sess.run(v) for v in ours[0].get_collection("variables")}
        got = sess.run(ours[3], {ours[1]: data})
    with tf1.Session(graph=theirs[0]) as sess:
        for v in theirs[0].get_collection("variables"):
            v.load(weights[v.name], sess)
        want = sess.run(theirs[3], {theirs[1]: data})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
