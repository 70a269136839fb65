"""Convolution, pooling and batch normalisation on tfteach alone: static shapes, build-time
errors, NumPy references for the kernels, the moving averages that UPDATE_OPS apply, and
``training=`` given as a tensor (a tf.cond chooses at run time)."""
from __future__ import annotations

import numpy as np
import pytest

import tfteach as tf

RNG = np.random.default_rng(11)
IMAGES = RNG.standard_normal((4, 6, 5, 3)).astype(np.float32)


def _reference_conv(x, f, stride):
    """A direct (slow, obvious) VALID convolution for a small case."""
    kh, kw, _, out = f.shape
    oh, ow = (x.shape[1] - kh) // stride + 1, (x.shape[2] - kw) // stride + 1
    y = np.zeros((x.shape[0], oh, ow, out), np.float64)
    for i in range(oh):
        for j in range(ow):
            window = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            y[:, i, j, :] = np.tensordot(window, f, axes=([1, 2, 3], [0, 1, 2]))
    return y


def test_conv2d_equals_a_direct_convolution():
    f = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)
    y = tf.nn.conv2d(IMAGES, f, strides=[1, 2, 2, 1], padding="VALID")
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y), _reference_conv(IMAGES, f, 2), rtol=1e-4,
                                   atol=1e-5)


def test_static_shapes_follow_padding_and_strides_with_an_unknown_batch():
    x = tf.placeholder(tf.float32, [None, 6, 5, 3])
    f = tf.zeros([3, 3, 3, 8])
    assert tf.nn.conv2d(x, f, [1, 2, 2, 1], "SAME").shape.as_list() == [None, 3, 3, 8]
    assert tf.nn.conv2d(x, f, [1, 2, 2, 1], "VALID").shape.as_list() == [None, 2, 2, 8]
    assert tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").shape.as_list() == \
        [None, 3, 2, 3]
    assert tf.nn.avg_pool(x, [1, 3, 3, 1], [1, 1, 1, 1], "SAME").shape.as_list() == \
        [None, 6, 5, 3]


def test_a_window_larger_than_the_image_is_a_build_time_error():
    x = tf.placeholder(tf.float32, [None, 2, 2, 3])
    with pytest.raises(ValueError, match="Negative dimension size caused by subtracting 3"):
        tf.nn.conv2d(x, tf.zeros([3, 3, 3, 1]), [1, 1, 1, 1], "VALID")


def test_filter_depth_must_divide_input_depth():
    x = tf.placeholder(tf.float32, [None, 4, 4, 3])
    with pytest.raises(ValueError, match=r"Depth of input \(3\) is not a multiple"):
        tf.nn.conv2d(x, tf.zeros([1, 1, 2, 1]), [1, 1, 1, 1], "SAME")


def test_nchw_on_a_virtual_gpu_equals_nhwc():
    f = RNG.standard_normal((2, 2, 3, 2)).astype(np.float32)
    nhwc = tf.nn.max_pool(tf.nn.conv2d(IMAGES, f, [1, 1, 1, 1], "SAME"), [1, 2, 2, 1],
                          [1, 2, 2, 1], "SAME")
    with tf.device("/gpu:0"):
        x = tf.constant(np.transpose(IMAGES, (0, 3, 1, 2)))
        nchw = tf.nn.max_pool(tf.nn.conv2d(x, f, [1, 1, 1, 1], "SAME", data_format="NCHW"),
                              [1, 1, 2, 2], [1, 1, 2, 2], "SAME", data_format="NCHW")
    with tf.Session() as sess:
        a, b = sess.run([nhwc, nchw])
    np.testing.assert_allclose(a, np.transpose(b, (0, 2, 3, 1)), rtol=1e-5, atol=1e-5)


def test_batch_normalization_updates_moving_averages_through_update_ops():
    x = tf.placeholder(tf.float32, [None, 6, 5, 3])
    y = tf.layers.batch_normalization(x, momentum=0.9, training=True)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert [op.name for op in updates] == ["batch_normalization/AssignMovingAvg",
                                           "batch_normalization/AssignMovingAvg_1"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, updates], {x: IMAGES})
        mean, var = sess.run(["batch_normalization/moving_mean:0",
                              "batch_normalization/moving_variance:0"])
    batch = IMAGES.reshape(-1, 3)
    np.testing.assert_allclose(mean, 0.1 * batch.mean(0), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(var, 0.9 + 0.1 * batch.var(0, ddof=1), rtol=1e-4)
    np.testing.assert_allclose(out.reshape(-1, 3).mean(0), 0, atol=1e-4)


@pytest.mark.parametrize("fused", [True, False])
def test_a_training_tensor_chooses_the_branch_at_run_time(fused):
    """As TF's smart_cond: fed True, batch statistics and moving averages that move; fed
    False, the moving statistics and no update."""
    x = tf.placeholder(tf.float32, [None, 6, 5, 3])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(x, momentum=0.9, training=training, fused=fused)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving = ["batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out, _ = sess.run([y, updates], {x: IMAGES, training: False})
        np.testing.assert_allclose(out, IMAGES / np.sqrt(1 + 1e-3), rtol=1e-5)
        np.testing.assert_allclose(sess.run(moving[0]), 0, atol=0)
        out, _ = sess.run([y, updates], {x: IMAGES, training: True})
        mean = sess.run(moving[0])
    np.testing.assert_allclose(out.reshape(-1, 3).mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(mean, 0.1 * IMAGES.reshape(-1, 3).mean(0), rtol=1e-4, atol=1e-6)


def test_dropout_with_a_training_tensor():
    x = tf.constant(np.ones((100, 10), np.float32))
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, rate=0.5, training=training)
    with tf.Session() as sess:
        kept = sess.run(y, {training: False})
        dropped = sess.run(y, {training: True})
    np.testing.assert_array_equal(kept, 1.0)
    assert 0.3 < (dropped == 0).mean() < 0.7 and set(np.unique(dropped)) <= {0.0, 2.0}
    assert tf.layers.dropout(x, training=tf.constant(False)).op.type == "Identity"


def test_a_conv_layer_called_twice_reuses_its_variables():
    layer = tf.layers.Conv2D(4, 3, padding="same", name="shared")
    a = layer(tf.placeholder(tf.float32, [None, 6, 5, 3]))
    b = layer(tf.placeholder(tf.float32, [None, 8, 8, 3]))
    assert [v.op.name for v in tf.trainable_variables()] == ["shared/kernel", "shared/bias"]
    assert a.shape.as_list() == [None, 6, 5, 4] and b.shape.as_list() == [None, 8, 8, 4]
    assert b.op.inputs[0].op.name == "shared/Conv2D_1"     # as TF: the same name scope


def test_options_tfteach_lacks_are_refused_not_ignored():
    x = tf.placeholder(tf.float32, [None, 6, 5, 3])
    with pytest.raises(NotImplementedError, match="does not support kernel_constraint"):
        tf.layers.conv2d(x, 4, 3, kernel_constraint=lambda w: w)
    with pytest.raises(NotImplementedError, match="does not support renorm"):
        tf.layers.batch_normalization(x, renorm=True)
    assert tf.trainable_variables() == []
