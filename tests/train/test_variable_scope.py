"""get_variable and variable_scope: names, reuse (True, AUTO_REUSE, inherited), the tower
pattern's reopened root scope, initializers, collections and tf.layers.dense."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tfteach as tf


def _init_and_run(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def test_variable_names_follow_variable_scopes_not_name_scopes():
    with tf.name_scope("outer"), tf.variable_scope("layer1") as scope:
        w = tf.get_variable("w", [2, 3])
        y = tf.identity(w)
    assert scope.name == "layer1"
    assert scope.original_name_scope == "outer/layer1/"
    assert w.name == "layer1/w:0"
    assert y.op.name == "outer/layer1/Identity"
    assert w.op.get_attr("shape") == tf.TensorShape([2, 3])


def test_a_second_get_variable_without_reuse_is_an_error_that_says_what_to_do():
    with tf.variable_scope("s"):
        tf.get_variable("w", [1])
    with pytest.raises(ValueError, match=r"Variable s/w already exists, disallowed. Did you mean "
                                         r"to set reuse=True or reuse=tf.AUTO_REUSE in VarScope\?"
                                         r"[\s\S]*test_variable_scope.py"):
        with tf.variable_scope("s"):
            tf.get_variable("w", [1])


_TWICE = textwrap.dedent("""\
    import tfteach as tf

    def layer():
        return tf.get_variable("w", [1])

    layer()
    try:
        layer()
    except ValueError as e:
        print(e)
""")


def test_originally_defined_at_lists_the_users_frames_in_a_folder_named_tfteach(tmp_path):
    """Frames count as tfteach's by the installed package's folder, not by a path that
    happens to contain 'tfteach' (a clone of the repository is often named so)."""
    here = tmp_path / "tfteach"
    here.mkdir()
    (here / "twice.py").write_text(_TWICE)
    root = str(Path(tf.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run([sys.executable, "-m", "twice"], cwd=here, env=env, text=True,
                         capture_output=True, timeout=120, check=True).stdout
    origin = out.split("Originally defined at:", 1)[1]
    script = str((here / "twice.py").resolve())
    assert origin.index(f'File "{script}", line 4, in layer') < \
        origin.index(f'File "{script}", line 6, in <module>')          # innermost first
    assert "runpy" not in origin and "tfteach/ops" not in origin


def test_reuse_true_returns_the_same_variable_and_needs_it_to_exist():
    with tf.variable_scope("s"):
        w = tf.get_variable("w", [2])
    with tf.variable_scope("s", reuse=True):
        assert tf.get_variable("w", [2]) is w
        with pytest.raises(ValueError, match="Variable s/v does not exist, or was not created "
                                             "with tf.get_variable()"):
            tf.get_variable("v", [2])
    with pytest.raises(ValueError, match=r"Trying to share variable s/w, but specified shape "
                                         r"\(3,\) and found shape \(2,\)"):
        with tf.variable_scope("s", reuse=True):
            tf.get_variable("w", [3])


def test_auto_reuse_creates_then_reuses():
    def layer():
        with tf.variable_scope("shared", reuse=tf.AUTO_REUSE):
            return tf.get_variable("w", [1])
    assert layer() is layer()
    assert len(tf.global_variables()) == 1


def test_reuse_is_inherited_and_reuse_false_does_not_turn_it_off():
    with tf.variable_scope("a"), tf.variable_scope("b"):
        w = tf.get_variable("w", [1])
    with tf.variable_scope("a", reuse=True):
        with tf.variable_scope("b", reuse=False) as inner:
            assert inner.reuse is True
            assert tf.get_variable("w", [1]) is w


def test_reuse_variables_inside_a_reopened_root_scope_does_not_leak_out():
    """The CIFAR-10 multi-GPU pattern: towers share variables; slots are created after."""
    towers = []
    with tf.variable_scope(tf.get_variable_scope()):
        for i in range(2):
            with tf.name_scope(f"tower_{i}"):
                towers.append(tf.get_variable("w", [1]))
                tf.get_variable_scope().reuse_variables()
    assert towers[0] is towers[1]
    assert tf.get_variable_scope().reuse is False
    assert tf.get_variable("v", [1]).name == "v:0"


def test_reopening_a_captured_scope_uses_its_name():
    with tf.variable_scope("model") as captured:
        w = tf.get_variable("w", [1])
    with tf.variable_scope("elsewhere"), tf.variable_scope(captured, reuse=True):
        assert tf.get_variable("w") is w


def test_default_names_are_made_unique():
    names = []
    for _ in range(3):
        with tf.variable_scope(None, default_name="block") as s:
            names.append(s.name)
    assert names == ["block", "block_1", "block_2"]


def test_scope_initializer_and_dtype_are_defaults_for_new_variables():
    with tf.variable_scope("s", initializer=tf.constant_initializer(7.0), dtype=tf.float64):
        v = tf.get_variable("v", [2])
    assert v.dtype == tf.float64
    np.testing.assert_array_equal(_init_and_run(v), [7.0, 7.0])


def test_initializer_values():
    tf.set_random_seed(3)
    zeros = tf.get_variable("zeros", [2, 2], initializer=tf.zeros_initializer())
    ones = tf.get_variable("ones", [3], initializer=tf.ones_initializer())
    const = tf.get_variable("const", [2, 2], initializer=tf.constant_initializer([1, 2, 3, 4]))
    normal = tf.get_variable("normal", [4000], initializer=tf.random_normal_initializer(1.0, 2.0))
    trunc = tf.get_variable("trunc", [4000], initializer=tf.truncated_normal_initializer(0, 1))
    glorot = tf.get_variable("glorot", [30, 70])          # the default initializer
    counter = tf.get_variable("counter", [], dtype=tf.int32)  # ints default to zeros
    got = _init_and_run([zeros, ones, const, normal, trunc, glorot, counter])
    np.testing.assert_array_equal(got[0], np.zeros((2, 2)))
    np.testing.assert_array_equal(got[1], np.ones(3))
    np.testing.assert_array_equal(got[2], [[1, 2], [3, 4]])
    assert abs(got[3].mean() - 1.0) < 0.15 and abs(got[3].std() - 2.0) < 0.15
    assert np.abs(got[4]).max() <= 2.0 and abs(got[4].std() - 0.88) < 0.05
    limit = np.sqrt(6 / (30 + 70))
    assert np.abs(got[5]).max() <= limit and np.abs(got[5]).max() > 0.9 * limit
    assert got[6] == 0
    assert glorot.op.name == "glorot"
    assert "glorot/Initializer/random_uniform" in [
        op.name for op in tf.get_default_graph().get_operations()]


def test_seeded_initializers_repeat_across_graphs():
    def values():
        tf.reset_default_graph()
        tf.set_random_seed(11)
        v = tf.get_variable("v", [5], initializer=tf.random_normal_initializer())
        return _init_and_run(v)
    np.testing.assert_array_equal(values(), values())


def test_a_new_variable_needs_a_full_shape_unless_given_a_value():
    with pytest.raises(ValueError, match=r"Shape of a new variable \(v\) must be fully "
                                         r"defined"):
        tf.get_variable("v", [None, 3])
    w = tf.get_variable("w", initializer=np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(_init_and_run(w), [0, 1, 2])


def test_collections_of_trainable_global_and_local_variables():
    w = tf.get_variable("w", [1])
    frozen = tf.get_variable("frozen", [1], trainable=False)
    local = tf.get_local_variable("local", [1])
    assert tf.trainable_variables() == [w]
    assert tf.global_variables() == [w, frozen]
    assert tf.local_variables() == [local]


def test_regularizer_losses_are_collected():
    tf.get_variable("w", [2], initializer=tf.ones_initializer(),
                    regularizer=lambda v: tf.reduce_sum(v) * 0.5)
    (loss,) = tf.get_collection("regularization_losses")
    assert loss.op.name.startswith("w/Regularizer/")
    assert _init_and_run(loss) == 1.0


def test_dense_layer_names_shapes_and_values():
    x = tf.placeholder(tf.float32, [None, 4])
    h = tf.layers.dense(x, 3, activation=tf.nn.relu,
                        kernel_initializer=tf.constant_initializer(0.5),
                        bias_initializer=tf.constant_initializer(-1.0))
    out = tf.layers.dense(h, 2)
    names = [v.name for v in tf.trainable_variables()]
    assert names == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0"]
    assert h.op.name == "dense/Relu" and out.op.name == "dense_1/BiasAdd"
    assert out.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(h, {x: np.ones((2, 4))})
    np.testing.assert_allclose(got, np.full((2, 3), 0.5 * 4 - 1.0))


def test_dense_layer_object_reuses_its_variables_and_named_layers_share_with_reuse():
    layer = tf.layers.Dense(2, name="fc")
    a = layer(tf.ones([1, 3]))
    b = layer(tf.ones([5, 3]))
    assert len(tf.trainable_variables()) == 2
    assert a.op.name == "fc/BiasAdd" and b.op.name.startswith("fc/")
    tf.layers.dense(tf.ones([1, 3]), 2, name="fc", reuse=True)
    assert len(tf.trainable_variables()) == 2
    with pytest.raises(ValueError, match="already exists"):
        tf.layers.dense(tf.ones([1, 3]), 2, name="fc")


def test_dense_on_rank_three_inputs_applies_to_the_last_axis():
    x = tf.ones([2, 5, 3])
    y = tf.layers.dense(x, 4, kernel_initializer=tf.ones_initializer())
    assert y.shape.as_list() == [2, 5, 4]
    np.testing.assert_allclose(_init_and_run(y), np.full((2, 5, 4), 3.0))
