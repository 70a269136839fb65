"""predict(): a deterministic modelled step over tfteach's own placement and plan."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import tfteach as tf
from tfteach.errors import InvalidArgumentError
from tfteach.hardware import SHIPPED, predict
from tfteach.runtime.step_trace import Timeline

V100_NVLINK = SHIPPED["8x V100 NVLink"]
V100_PCIE = SHIPPED["2x V100 PCIe"]


def mlp_step(hidden: int = 128):
    x = tf.placeholder(tf.float32, [None, 64], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    w1 = tf.Variable(tf.zeros([64, hidden]))
    w2 = tf.Variable(tf.zeros([hidden, 10]))
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    return tf.train.GradientDescentOptimizer(0.1).minimize(loss), x, y


def batch(x, y, n: int) -> dict:
    return {x: np.zeros((n, 64), np.float32), y: np.zeros(n, np.int64)}


def test_the_same_graph_and_feeds_give_the_same_estimate():
    train, x, y = mlp_step()
    a = predict(train, batch(x, y, 128), profile="H200")
    b = predict(train, batch(x, y, 128), profile="H200")
    assert a.step_time_s == b.step_time_s > 0
    assert a.run_metadata.step_stats == b.run_metadata.step_stats
    assert a.device_busy_s == b.device_busy_s and a.link_bytes == b.link_bytes
    tf.reset_default_graph()                     # the same program built again
    train, x, y = mlp_step()
    again = predict(train, batch(x, y, 128), profile="H200")
    assert again.step_time_s == a.step_time_s
    assert again.run_metadata.step_stats == a.run_metadata.step_stats


def test_batch_dimension_comes_from_the_feeds_through_the_gradient_graph():
    train, x, y = mlp_step(hidden=4096)
    small = predict(train, batch(x, y, 256), profile="H200")
    large = predict(train, batch(x, y, 8192), profile="H200")
    assert small.unknown_shapes == [] and large.unknown_shapes == []
    assert large.device_busy_s[_gpu(0)] > 4 * small.device_busy_s[_gpu(0)]


def _gpu(i: int, task: str = "/job:localhost/replica:0/task:0") -> str:
    return f"{task}/device:GPU:{i}"


def towers(n_gpus: int, per_tower: int, dim: int, hidden: int):
    """Data parallelism: each tower multiplies its slice by the shared weights and forms a
    weight gradient; the gradients are averaged on GPU:0."""
    with tf.device("/gpu:0"):
        w = tf.Variable(tf.zeros([dim, hidden]), name="w")
    grads, feeds = [], {}
    for i in range(2):
        with tf.device(f"/gpu:{i if n_gpus == 2 else 0}"), tf.name_scope(f"tower_{i}"):
            x = tf.placeholder(tf.float32, [None, dim], name="x")
            h = tf.matmul(x, w)
            grads.append(tf.matmul(x, h, transpose_a=True))
            feeds[x] = np.zeros((per_tower, dim), np.float32)
    with tf.device("/gpu:0"):
        return tf.assign_sub(w, tf.add_n(grads) / 2.0).op, feeds


def two_ways(profile, per_tower: int, dim: int, hidden: int):
    one = predict(*towers(1, per_tower, dim, hidden), profile=profile)
    tf.reset_default_graph()
    two = predict(*towers(2, per_tower, dim, hidden), profile=profile)
    return one, two


def test_two_towers_beat_one_gpu_with_big_compute_and_nvlink():
    one, two = two_ways(V100_NVLINK, per_tower=4096, dim=2048, hidden=2048)
    assert two.device_busy_s[_gpu(1)] > 0.4 * two.device_busy_s[_gpu(0)]
    assert _gpu(1) not in one.device_busy_s
    assert two.step_time_s < 0.7 * one.step_time_s


def test_two_towers_lose_when_big_weights_cross_a_slow_link_for_little_compute():
    one, two = two_ways(V100_PCIE, per_tower=8, dim=4096, hidden=4096)
    assert two.step_time_s > 2 * one.step_time_s
    link = "GPU:0 -> GPU:1 (PCIe 3.0 x16 (through the host))"
    assert two.link_bytes[link] == 4096 * 4096 * 4       # the weights, once


def test_link_bytes_are_the_sizes_of_the_tensors_that_cross():
    with tf.device("/gpu:0"):
        a = tf.placeholder(tf.float32, [None, 250], name="a")
        b = a * 2.0
    with tf.device("/gpu:1"):
        c = tf.reduce_sum(b, 1)
        d = c + tf.reduce_sum(b, 0)[0]           # b crosses once, not twice
    est = predict(d, {a: np.ones((1000, 250), np.float32)}, profile=V100_NVLINK)
    assert est.link_bytes == {
        "CPU:0 -> GPU:0 (PCIe 3.0 x16)": 1000 * 250 * 4,         # the feed
        "GPU:0 -> GPU:1 (NVLink 2.0 (2 links))": 1000 * 250 * 4,  # b
        "GPU:1 -> CPU:0 (PCIe 3.0 x16)": 1000 * 4,                # the fetch
    }
    nvlink = V100_NVLINK.gpu_link
    assert est.link_time_s["GPU:0 -> GPU:1 (NVLink 2.0 (2 links))"] == \
        pytest.approx(nvlink.latency_s + 1e6 / nvlink.bandwidth)
    moved = {(t.src_device, t.dst_device): t.bytes for t in est.run_metadata.step_stats.transfers}
    assert moved[(_gpu(0), _gpu(1))] == 1000 * 250 * 4


def test_tasks_on_different_hosts_talk_over_the_network_link():
    with tf.device("/job:ps/task:0/cpu:0"):
        w = tf.Variable(tf.zeros([256, 256]), name="w")
    with tf.device("/job:worker/task:0/gpu:0"):
        out = tf.reduce_sum(tf.matmul(tf.ones([8, 256]), w))
    est = predict(out, profile="2 hosts x 2 V100, 1 Gbit")
    label = "ps:0/CPU:0 -> worker:0/GPU:0 (1 Gbit Ethernet)"
    assert est.link_bytes[label] == 256 * 256 * 4
    assert est.link_time_s[label] >= 256 * 256 * 4 / (1e9 / 8)


def test_modelled_step_stats_draw_as_a_timeline_and_name_the_profile():
    with tf.device("/gpu:0"):
        a = tf.ones([512, 512])
    with tf.device("/gpu:1"):
        b = tf.matmul(a, a, name="product")
    est = predict(b, profile=V100_NVLINK)
    meta = est.run_metadata
    assert meta.modelled_on == "8x V100 NVLink"
    data = Timeline(meta.step_stats).to_data()
    product = next(o for o in data["ops"] if o["name"] == "product")
    copy = next(t for t in data["transfers"] if t["dst_device"] == _gpu(1))
    assert copy["end_us"] <= product["start_us"] and copy["consumers"] == ["product"]
    # the timeline starts at the first op; the step also holds the session's own overhead
    busy_s = est.step_time_s - V100_NVLINK.step_overhead_s
    assert data["step_us"] == pytest.approx(busy_s * 1e6, abs=2)


def test_a_device_the_profile_lacks_fails_placement_as_in_tf():
    with tf.device("/gpu:3"):
        a = tf.ones([2]) * 2.0
    with pytest.raises(InvalidArgumentError, match="GPU:3"):
        predict(a, profile="H200")
    assert predict(a, profile="H200", allow_soft_placement=True).step_time_s > 0


def test_a_slower_link_gives_a_longer_step():
    with tf.device("/gpu:0"):
        a = tf.ones([1024, 1024])
    with tf.device("/gpu:1"):
        b = tf.reduce_sum(a)
    fast = predict(b, profile=V100_NVLINK)
    slow = predict(b, profile=replace(V100_NVLINK, gpu_link=V100_PCIE.gpu_link))
    assert slow.step_time_s > fast.step_time_s



def test_ops_with_no_job_run_on_the_sessions_own_task():
    with tf.device(tf.train.replica_device_setter(ps_tasks=1)):
        w = tf.Variable(tf.ones([64, 64]), name="w")
        out = tf.reduce_sum(tf.matmul(w, w), name="out")
    est = predict(out, profile="2 hosts x 2 V100, 10 Gbit", task="/job:worker/task:0")
    placed = est.run_metadata.placement
    assert placed["w"].startswith("/job:ps/replica:0/task:0")
    assert placed["out"] == _gpu(0, "/job:worker/replica:0/task:0")
    # as in TF, the ps task's own GPU:0 takes the variable (a ps host of this profile has GPUs)
    assert est.link_bytes["ps:0/GPU:0 -> worker:0/GPU:0 (10 Gbit Ethernet)"] == 64 * 64 * 4


def test_a_convolution_and_its_gradients_cost_their_multiply_adds():
    x = tf.placeholder(tf.float32, [None, 32, 32, 16])
    w = tf.Variable(tf.zeros([3, 3, 16, 64]))
    y = tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(y))
    gpu = SHIPPED["H200"].gpu
    est = predict(train, {x: np.zeros((256, 32, 32, 16), np.float32)}, profile="H200")
    macs = 256 * 32 * 32 * 64 * 3 * 3 * 16
    times = {n.op: n.all_end_rel_micros for d in est.run_metadata.step_stats.dev_stats
             for n in d.node_stats}
    assert times["Conv2D"] == pytest.approx((gpu.launch_s + 2 * macs / gpu.peak("float32"))
                                            * 1e6, abs=1)
    assert times["Conv2DBackpropFilter"] == pytest.approx(times["Conv2D"], abs=1)


def test_task_hosts_put_tasks_together_or_apart_and_may_add_hosts_like_the_profiles():
    """``task_hosts``: tasks on one host copy through its shared memory, on different hosts
    over the network, whose port on the ps's host sends one tensor at a time; an index past
    the profile's two hosts is a third host of the same kind."""
    with tf.device("/job:ps/task:0/cpu:0"):
        w = tf.Variable(tf.zeros([64, 64]), name="w")
    sums = []
    for i in range(3):
        with tf.device(f"/job:worker/task:{i}/cpu:0"):
            sums.append(tf.reduce_sum(w * 2.0))
    profile = SHIPPED["2 hosts x 2 V100, 1 Gbit"]
    assert profile.hosts == 2
    est = predict(tf.group(*sums), profile=profile, task="/job:worker/task:0",
                  task_hosts={"ps:0": 0, "worker:0": 0, "worker:1": 1, "worker:2": 2})
    assert est.link_bytes["ps:0/CPU:0 -> worker:0/CPU:0 (shared memory)"] == 64 * 64 * 4
    remote = sorted((t.all_start_micros, t.all_end_rel_micros)
                    for t in est.run_metadata.step_stats.transfers
                    if t.dst_device.startswith(("/job:worker/replica:0/task:1",
                                                "/job:worker/replica:0/task:2")))
    assert len(remote) == 2
    for i in (1, 2):
        label = f"ps:0/CPU:0 -> worker:{i}/CPU:0 (1 Gbit Ethernet)"
        assert est.link_time_s[label] == pytest.approx(profile.network.time(64 * 64 * 4))
    (first_start, first_us), (second_start, _) = remote
    assert second_start >= first_start + first_us - 1, "one port on host 0: one after another"
