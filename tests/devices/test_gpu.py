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


def test_training_on_a_batch_of_unknown_size_on_gpu_matches_cpu():
    """A learner's usual model: placeholders with a batch of None, so the gradient of each
    mean divides by ``Cast(Size(x))``, which Size answers in host memory."""
    rng = np.random.default_rng(2)
    xs = rng.random((32, 8), dtype=np.float32)
    labels = rng.integers(0, 4, 32).astype(np.int32)
    results = []
    for dev in ("/gpu:0", "/cpu:0"):
        tf.reset_default_graph()
        with tf.device(dev):
            x = tf.placeholder(tf.float32, [None, 8])
            y = tf.placeholder(tf.int32, [None])
            w = tf.Variable(np.full((8, 4), 0.1, np.float32))
            logits = tf.matmul(x, w)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=logits)) + tf.reduce_mean(tf.square(logits))
            step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(step, {x: xs, y: labels})
        results.append(sess.run(w))
        assert sess.placement().devices[step.name].name == LOCAL + dev[1:].upper()
    np.testing.assert_allclose(results[0], results[1], rtol=1e-4)


def _shape_arithmetic_losses():
    """Losses whose gradients compute shapes on the fly (a batch of None)."""
    return {
        "mean over an axis of unknown size": lambda h: tf.reduce_sum(tf.reduce_mean(h, 1)),
        "tile of a reshape": lambda h: tf.reduce_mean(tf.tile(tf.reshape(h, [-1, 3, 1]),
                                                              [1, 1, 2])),
        "scaled by the batch size": lambda h: tf.reduce_sum(h) * tf.cast(
            tf.reduce_prod(tf.shape(h)), tf.float32),
        "a strided slice, scaled by tf.shape(h)[0]": lambda h: tf.reduce_sum(
            h[1:, ::2]) * tf.cast(tf.shape(h)[0], tf.float32),
    }


@pytest.mark.parametrize("name", sorted(_shape_arithmetic_losses()))
def test_gradients_with_shape_arithmetic_on_gpu_match_cpu(name):
    xs = np.random.default_rng(3).random((16, 8), dtype=np.float32)
    results = []
    for dev in ("/gpu:0", "/cpu:0"):
        tf.reset_default_graph()
        with tf.device(dev):
            x = tf.placeholder(tf.float32, [None, 8])
            w = tf.Variable(np.full((8, 3), 0.5, np.float32))
            loss = _shape_arithmetic_losses()[name](tf.matmul(x, w))
            grad = tf.gradients(loss, [w])[0]
        sess = tf.Session()
        sess.run(tf.global_variables_initializer())
        results.append(sess.run([loss, grad], {x: xs}))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-4)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-4)


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


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_cluster_trains_on_the_real_gpu_as_on_the_cpu():
    """Three task processes share the real GPU: the ps's variable and the model on a
    worker's GPU:0, fed a batch of None; the same steps on the worker's CPU:0 agree."""
    from tfteach.distributed.local.local_cluster import LocalCluster

    rng = np.random.default_rng(4)
    xs, ys = rng.random((64, 8), dtype=np.float32), rng.integers(0, 3, 64).astype(np.int32)
    losses, traced = {}, {}
    with LocalCluster(ps=1, workers=2) as cluster:
        for dev in ("/job:worker/task:1/device:GPU:0", "/job:worker/task:1/device:CPU:0"):
            tf.reset_default_graph()
            with tf.device("/job:ps/task:0"):
                w = tf.Variable(np.full((8, 3), 0.1, np.float32))
            with tf.device(dev):
                x = tf.placeholder(tf.float32, [None, 8])
                y = tf.placeholder(tf.int32, [None])
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=y, logits=tf.matmul(x, w)))
                train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            with tf.Session(cluster.target("worker", 0)) as sess:
                sess.run(tf.global_variables_initializer())
                losses[dev] = [sess.run([train, loss], {x: xs, y: ys})[1] for _ in range(10)]
                md = tf.RunMetadata()
                sess.run(loss, {x: xs, y: ys}, run_metadata=md,
                         options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
                traced[dev] = {d.device for d in md.step_stats.dev_stats}
    gpu, cpu = losses.values()
    assert gpu[-1] < gpu[0]
    np.testing.assert_allclose(gpu, cpu, rtol=1e-4)
    assert "/job:ps/replica:0/task:0/device:GPU:0" in traced["/job:worker/task:1/device:CPU:0"]
    assert "/job:worker/replica:0/task:1/device:GPU:0" in traced["/job:worker/task:1/device:GPU:0"]
