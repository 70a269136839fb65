"""Real NVIDIA GPUs through CuPy (marked ``gpu``: skipped cleanly without CuPy and a GPU).

The same programs as the CPU suite, with real GPUs replacing the virtual ones: placements,
values against NumPy, transfers, TF's device description, the memory fraction as CuPy's
pool limit, out-of-memory as ResourceExhaustedError, and step stats.
"""
import re

import numpy as np
import pytest

import tfteach as tf

pytestmark = pytest.mark.gpu
LOCAL = "/job:localhost/replica:0/task:0/device:"


def test_real_gpus_replace_virtual_ones_and_describe_themselves():
    gpus = [d for d in tf.config.list_devices() if d.device_type == "GPU"]
    assert gpus and not any(g.is_virtual for g in gpus)
    assert re.match(r"device: 0, name: .+, pci bus id: [0-9a-f:.]+, compute capability: \d+\.\d+",
                    gpus[0].description)


def test_matmul_on_gpu_matches_numpy_and_lands_there():
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((256, 128)).astype(np.float32)
    b_np = rng.standard_normal((128, 64)).astype(np.float32)
    with tf.device("/gpu:0"):
        c = tf.matmul(tf.constant(a_np), tf.constant(b_np))
    with tf.device("/cpu:0"):
        d = tf.reduce_sum(c, axis=0)
    sess = tf.Session()
    out_c, out_d = sess.run([c, d])
    assert isinstance(out_c, np.ndarray)
    np.testing.assert_allclose(out_c, a_np @ b_np, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out_d, (a_np @ b_np).sum(0), rtol=1e-3, atol=1e-3)
    assert sess.placement().devices[c.op.name].name == LOCAL + "GPU:0"


def test_training_step_on_gpu_matches_cpu():
    rng = np.random.default_rng(1)
    xs = rng.random((32, 8), dtype=np.float32)
    results = []
    for dev in ("/gpu:0", "/cpu:0"):
        tf.reset_default_graph()
        with tf.device(dev):
            w = tf.Variable(np.ones((8, 1), np.float32))
            loss = tf.reduce_mean(tf.square(tf.matmul(xs, w)))
            step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(step)
        results.append(sess.run(w))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4)


def test_memory_fraction_limits_cupy_and_oom_is_resource_exhausted():
    cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.01))
    with tf.device("/gpu:0"):
        big = tf.fill([32768, 32768], 1.0)       # 4 GiB, beyond 1% of any GPU
        y = big * 2.0
    with pytest.raises(tf.errors.ResourceExhaustedError) as e:
        tf.Session(config=cfg).run(y)
    assert "OOM when allocating tensor" in str(e.value) and "Hint:" in str(e.value)


def test_step_stats_on_gpu_record_ops_and_transfers():
    with tf.device("/gpu:0"):
        a = tf.constant(np.ones((64, 64), np.float32)) * 2.0
    with tf.device("/cpu:0"):
        b = a + 1.0
    md = tf.RunMetadata()
    tf.Session().run(b, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=md)
    devices = {d.device for d in md.step_stats.dev_stats}
    assert LOCAL + "GPU:0" in devices
    [t] = md.step_stats.transfers
    assert t.src_device == LOCAL + "GPU:0" and t.bytes == 64 * 64 * 4


def test_two_real_gpus_towers_sum_on_cpu():
    gpus = [d for d in tf.config.list_devices() if d.device_type == "GPU"]
    if len(gpus) < 2:
        pytest.skip("needs two GPUs")
    towers = []
    for d in ("/gpu:0", "/gpu:1"):
        with tf.device(d):
            a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
            b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2])
            towers.append(tf.matmul(a, b))
    with tf.device("/cpu:0"):
        total = tf.add_n(towers)
    assert tf.Session().run(total).tolist() == [[44.0, 56.0], [98.0, 128.0]]
