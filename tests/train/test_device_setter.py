"""replica_device_setter: TF's round-robin over ps tasks, explicit devices, strategies (E3)."""
import logging

import pytest

import tfteach as tf
from tfteach.train.device_setter import (
    GreedyLoadBalancingStrategy,
    byte_size_load_fn,
    replica_device_setter,
)

CLUSTER = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222"]}


def _setter(**kwargs):
    kwargs.setdefault("cluster", CLUSTER)
    return replica_device_setter(**kwargs)


def test_variables_go_round_robin_over_ps_tasks():
    setter = _setter()
    with tf.device(setter):
        v1, v2, v3 = (tf.Variable(1.0, name=f"v{i}") for i in (1, 2, 3))
    assert [v.device for v in (v1, v2, v3)] == ["/job:ps/task:0", "/job:ps/task:1",
                                                "/job:ps/task:0"]
    assert setter({"name": "rv", "op": "VarHandleOp", "device": ""}) == "/job:ps/task:1"


def test_non_variable_ops_go_to_the_worker_device():
    with tf.device(_setter()):
        v = tf.Variable(1.0, name="v")
        add = tf.add(v, 1.0, name="add")
    assert v.initial_value.op.device == "/job:worker"
    assert add.op.device == "/job:worker"


def test_a_variables_assign_and_read_follow_it_to_the_ps():
    with tf.device(_setter()):
        v = tf.Variable(1.0, name="v")
    assert v.initializer.device == v.device == v.value().op.device == "/job:ps/task:0"


def test_a_variable_on_another_job_keeps_its_device_and_does_not_tick():
    with tf.device(_setter()):
        with tf.device("/job:worker/task:1/device:GPU:0"):
            pinned = tf.Variable(1.0, name="pinned")
        after = tf.Variable(2.0, name="after")
    assert pinned.device == "/job:worker/task:1/device:GPU:0"
    assert after.device == "/job:ps/task:0"


def test_a_variable_with_only_a_device_type_gets_a_ps_task():
    with tf.device(_setter()), tf.device("/device:GPU:1"):
        v = tf.Variable(1.0, name="v")
    assert v.device == "/job:ps/task:0/device:GPU:1"


def test_ps_device_with_a_device_type():
    with tf.device(_setter(ps_device="/job:ps/device:CPU:0")):
        a, b = tf.Variable(1.0, name="a"), tf.Variable(1.0, name="b")
    assert [a.device, b.device] == ["/job:ps/task:0/device:CPU:0", "/job:ps/task:1/device:CPU:0"]


def test_worker_device_with_a_task():
    with tf.device(_setter(worker_device="/job:worker/task:1")):
        c = tf.constant(1.0, name="c")
    assert c.op.device == "/job:worker/task:1"


def test_ps_tasks_without_a_cluster():
    with tf.device(replica_device_setter(ps_tasks=3)):
        vs = [tf.Variable(float(i)) for i in range(4)]
    assert [v.device for v in vs] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2",
                                      "/job:ps/task:0"]


def test_no_ps_tasks_means_none():
    assert replica_device_setter() is None
    assert replica_device_setter(cluster={"worker": ["w0:2222"]}) is None
    with tf.device(replica_device_setter(cluster={"worker": ["w0:2222"]})):
        c = tf.constant(1.0)
    assert c.op.device == ""


def test_a_cluster_spec_is_accepted():
    from tfteach.distributed.protocol.cluster_spec import ClusterSpec
    spec = ClusterSpec({"ps": {0: "a:1", 2: "b:1"}, "worker": ["w:1"]})
    setter = replica_device_setter(cluster=spec)
    assert [setter({"op": "VariableV2"}) for _ in range(3)] == [
        "/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


def test_a_cluster_def_is_accepted():
    from tfteach.distributed.protocol.cluster_spec import ClusterSpec
    cluster_def = ClusterSpec({"ps": ["a:1", "b:1"], "worker": ["w:1"]}).as_cluster_def()
    with tf.device(replica_device_setter(cluster=cluster_def)):
        v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
        total = v1 + v2
    assert [v1.device, v2.device, total.device] == ["/job:ps/task:0", "/job:ps/task:1",
                                                    "/job:worker"]


def test_a_cluster_def_without_ps_job_gives_no_setter():
    from tfteach.distributed.protocol.cluster_spec import ClusterSpec
    cluster_def = ClusterSpec({"worker": ["w:1"]}).as_cluster_def()
    assert replica_device_setter(cluster=cluster_def) is None


def test_a_cluster_of_another_type_is_tfs_type_error():
    with pytest.raises(TypeError, match="`cluster` must be a dictionary mapping one or more job "
                                        "names to lists of network addresses, or a `ClusterDef` "
                                        "protocol buffer"):
        replica_device_setter(cluster=["ps0:2222"])


def test_strategy_must_be_callable():
    with pytest.raises(TypeError, match="ps_strategy must be callable"):
        replica_device_setter(ps_tasks=2, ps_strategy=3)


def test_without_merge_devices_a_placed_op_keeps_its_device(caplog):
    with caplog.at_level(logging.WARNING, logger="tfteach.train"):
        setter = _setter(merge_devices=False)
    assert "DEPRECATION: It is recommended to set merge_devices=true" in caplog.text
    assert setter({"op": "VariableV2", "device": "/device:GPU:0"}) == "/device:GPU:0"
    assert setter({"op": "VariableV2", "device": ""}) == "/job:ps/task:0"


def test_custom_ps_ops():
    setter = _setter(ps_ops=["Const"])
    with tf.device(setter):
        c = tf.constant(1.0, name="c")
        v = tf.Variable(c, name="v")
    assert c.op.device == "/job:ps/task:0"
    assert v.device == "/job:worker"


def test_greedy_strategy_balances_bytes():
    strategy = GreedyLoadBalancingStrategy(2, byte_size_load_fn)
    with tf.device(_setter(ps_strategy=strategy)):
        big = tf.Variable(tf.zeros([100]), name="big")          # 400 bytes -> task 0
        small = [tf.Variable(tf.zeros([10]), name=f"s{i}") for i in range(3)]   # 40 each
        step = tf.Variable(tf.zeros([], tf.int64), name="step")  # 8 bytes
    assert big.device == "/job:ps/task:0"
    assert [v.device for v in small] == ["/job:ps/task:1"] * 3
    assert step.device == "/job:ps/task:1"
    assert tf.train.GreedyLoadBalancingStrategy is GreedyLoadBalancingStrategy


def test_greedy_ties_go_to_the_lowest_task():
    strategy = GreedyLoadBalancingStrategy(3, lambda op: 1.0)
    assert [strategy(None) for _ in range(4)] == [0, 1, 2, 0]


def test_byte_size_load_fn():
    v = tf.Variable(tf.zeros([3, 4], tf.float64), name="v")
    assert byte_size_load_fn(v.op) == 96
    with pytest.raises(ValueError, match="must have a single output"):
        byte_size_load_fn(tf.no_op())
