"""Ring all-reduce and parameter-server arithmetic, modelled and by formula."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import tfteach as tf
from tfteach.hardware import (SHIPPED, LinkProfile, parameter_server_time, predict,
                              ring_allreduce, ring_allreduce_time)

LINK = LinkProfile("test link", 10e9, 5e-6)


def test_ring_allreduce_time_is_the_textbook_formula():
    s = 64 << 20
    assert ring_allreduce_time(s, 8, LINK) == pytest.approx(2 * 7 / 8 * s / 10e9 + 14 * 5e-6)
    assert ring_allreduce_time(s, 1, LINK) == 0.0
    # the bandwidth term tends to 2 S / bandwidth however many devices there are
    assert ring_allreduce_time(s, 64, replace(LINK, latency_s=0)) < 2 * s / 10e9


def test_parameter_server_time_serialises_the_servers_port():
    assert parameter_server_time(1e6, 4, LINK) == pytest.approx(8 * (5e-6 + 1e6 / 10e9))


def _links_only(profile):
    """The profile with free compute and no fixed costs: only links take time."""
    free = dict(launch_s=0.0, idle_op_s=0.0, mem_bandwidth=1e30,
                flops={"float32": 1e30})
    gpu = replace(profile.gpu, **free)
    return replace(profile, gpu=gpu, cpu=replace(profile.cpu, **free), step_overhead_s=0.0)


def test_a_modelled_ring_of_ops_takes_the_formulas_time():
    n, elements = 4, 1 << 18                              # 1 MiB per device
    devices = [f"/gpu:{i}" for i in range(n)]
    tensors = []
    for i, dev in enumerate(devices):
        with tf.device(dev):
            tensors.append(tf.ones([elements]) * float(i))
    summed = ring_allreduce(tensors, devices)
    profile = _links_only(SHIPPED["8x V100 NVLink"])
    est = predict(tf.group(*summed), profile=profile)
    expected = ring_allreduce_time(elements * 4, n, profile.gpu_link)
    assert est.step_time_s == pytest.approx(expected, rel=1e-9)
    assert sum(est.link_bytes.values()) == 2 * (n - 1) * elements * 4   # n chunks per step


def test_the_ring_really_sums_in_a_session():
    devices = ["/gpu:0", "/gpu:1"]
    values = [np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 10, np.float32)]
    tensors = []
    for v, dev in zip(values, devices, strict=True):
        with tf.device(dev):
            tensors.append(tf.constant(v))
    with tf.Session() as sess:
        out = sess.run(ring_allreduce(tensors, devices))
    for got in out:
        np.testing.assert_array_equal(got, values[0] + values[1])


def test_a_modelled_parameter_server_step_takes_the_formulas_time():
    elements, workers = 1 << 18, 2
    pushed = []
    for i in range(workers):
        with tf.device(f"/job:worker/task:{i}/cpu:0"):
            pushed.append(tf.ones([elements]) * float(i))
    with tf.device("/job:ps/task:0/cpu:0"):
        total = tf.add_n(pushed)
    pulled = []
    for i in range(workers):
        with tf.device(f"/job:worker/task:{i}/cpu:0"):
            pulled.append(tf.identity(total))
    profile = replace(_links_only(SHIPPED["2 hosts x 2 V100, 10 Gbit"]), hosts=3)
    est = predict(tf.group(*pulled), profile=profile)
    assert est.step_time_s == pytest.approx(
        parameter_server_time(elements * 4, workers, profile.network), rel=1e-9)
