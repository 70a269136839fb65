"""Convolutional kernels on a real NVIDIA GPU through CuPy (marked ``gpu``: skipped cleanly
without CuPy and a GPU): conv2d, pooling, LRN and fused batch norm, forward and backward,
NHWC and NCHW, give the CPU's values."""
import numpy as np
import pytest

import tfteach as tf

pytestmark = pytest.mark.gpu


def _net(device: str, data_format: str):
    rng = np.random.default_rng(0)
    images = rng.standard_normal((4, 9, 8, 3)).astype(np.float32)
    kernel = rng.standard_normal((3, 3, 3, 5)).astype(np.float32)
    channels_first = data_format == "NCHW"
    with tf.device(device):
        x = tf.constant(np.transpose(images, (0, 3, 1, 2)) if channels_first else images)
        w = tf.constant(kernel)
        window = [1, 1, 2, 2] if channels_first else [1, 2, 2, 1]
        h = tf.nn.conv2d(x, w, window, "SAME", data_format=data_format)
        h = tf.nn.max_pool(h, window, [1, 1, 1, 1], "VALID", data_format=data_format)
        h = tf.nn.avg_pool(h, window, window, "SAME", data_format=data_format)
        h, _, _ = tf.nn.fused_batch_norm(h, tf.ones([5]), tf.zeros([5]),
                                         data_format=data_format)
        if not channels_first:
            h = tf.nn.lrn(h, 2, alpha=0.1)
        grads = tf.gradients(tf.reduce_sum(h * h), [x, w])
    return [h, *grads]


@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_conv_net_on_the_gpu_matches_the_cpu(data_format):
    on_gpu = _net("/gpu:0", data_format)
    on_cpu = _net("/cpu:0", data_format)
    sess = tf.Session()
    gpu_values, cpu_values = sess.run(on_gpu), sess.run(on_cpu)
    for a, b in zip(gpu_values, cpu_values, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
    assert sess.placement().devices[on_gpu[0].op.name].name.endswith("device:GPU:0")
