"""RunMetadata and friends as protobuf messages (HasField, Clear) and local partition graphs."""
import pytest

import tfteach as tf
from tfteach.framework.node_def import GraphDef, NodeDef
from tfteach.runtime.session_config import StepStats

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
PARTITIONS = tf.RunOptions(output_partition_graphs=True)


def _two_device_program():
    """a (cpu:0) and a fed p go to b on cpu:1; b comes back to c and s on cpu:0."""
    with tf.device("/cpu:0"):
        a = tf.constant([1.0, 2.0], name="a")
        p = tf.placeholder(tf.float32, [2], name="p")
    with tf.device("/cpu:1"):
        b = tf.multiply(a, p, name="b")
    with tf.device("/cpu:0"):
        c = tf.multiply(b, 3.0, name="c")
        s = tf.reduce_sum(c, name="s")
    sess = tf.Session(config=tf.ConfigProto(device_count={"CPU": 2}))
    return sess, s, {p: [1.0, 1.0]}


def _nodes(md):
    return {(n.name, n.op, n.device.rsplit(":", 1)[1]) for g in md.partition_graphs
            for n in g.node}


def test_step_stats_is_present_only_after_a_traced_run():
    sess, s, feeds = _two_device_program()
    md = tf.RunMetadata()
    assert not md.HasField("step_stats")
    sess.run(s, feeds, run_metadata=md)
    assert not md.HasField("step_stats")
    sess.run(s, feeds, options=FULL, run_metadata=md)
    assert md.HasField("step_stats")


def test_each_run_replaces_the_metadata_of_the_last():
    x = tf.constant(1.0) * 2.0
    sess = tf.Session()
    md = tf.RunMetadata()
    sess.run(x, options=FULL, run_metadata=md)
    sess.run(x, run_metadata=md)
    assert not md.HasField("step_stats")


def test_a_list_or_scalar_field_has_no_presence():
    with pytest.raises(ValueError, match="Field tensorflow.RunMetadata.partition_graphs does "
                                         "not have presence."):
        tf.RunMetadata().HasField("partition_graphs")
    with pytest.raises(ValueError, match="Field tensorflow.RunOptions.trace_level does not"):
        tf.RunOptions().HasField("trace_level")


def test_an_unknown_field_is_value_error():
    with pytest.raises(ValueError, match='Protocol message StepStats has no "nope" field.'):
        StepStats().HasField("nope")


def test_a_sub_message_is_present_once_changed_or_assigned():
    config = tf.ConfigProto()
    assert not config.HasField("gpu_options")
    config.gpu_options.allow_growth = True
    assert config.HasField("gpu_options")
    other = tf.ConfigProto()
    other.graph_options = tf.GraphOptions()
    assert other.HasField("graph_options")


def test_clear_resets_fields_and_presence():
    md = tf.RunMetadata()
    md.step_stats = StepStats()
    md.placement["x"] = "/cpu:0"
    md.Clear()
    assert not md.HasField("step_stats") and md.placement == {}


def test_partition_graphs_hold_one_graph_per_device():
    sess, s, feeds = _two_device_program()
    md = tf.RunMetadata()
    sess.run(s, feeds, options=PARTITIONS, run_metadata=md)
    assert [{n.device for n in g.node} for g in md.partition_graphs] == [
        {"/job:localhost/replica:0/task:0/device:CPU:0"},
        {"/job:localhost/replica:0/task:0/device:CPU:1"}]
    assert not md.HasField("step_stats")


def test_partition_graphs_join_devices_with_send_and_recv():
    sess, s, feeds = _two_device_program()
    md = tf.RunMetadata()
    sess.run(s, feeds, options=PARTITIONS, run_metadata=md)
    assert _nodes(md) == {
        ("_arg_p_0_0", "_Arg", "0"), ("a", "Const", "0"), ("a/_0", "_Send", "0"),
        ("_arg_p_0_0/_2", "_Send", "0"), ("c/y", "Const", "0"), ("b/_5", "_Recv", "0"),
        ("c", "Mul", "0"), ("Const", "Const", "0"), ("s", "Sum", "0"),
        ("_retval_s_0_0", "_Retval", "0"), ("a/_1", "_Recv", "1"),
        ("_arg_p_0_0/_3", "_Recv", "1"), ("b", "Mul", "1"), ("b/_4", "_Send", "1")}


def test_a_recv_shares_its_sends_tensor_name_and_feeds_the_consumer():
    sess, s, feeds = _two_device_program()
    md = tf.RunMetadata()
    sess.run(s, feeds, options=PARTITIONS, run_metadata=md)
    nodes = {n.name: n for g in md.partition_graphs for n in g.node}
    assert nodes["a/_0"].attr["tensor_name"] == nodes["a/_1"].attr["tensor_name"]
    assert nodes["a/_1"].attr["send_device"].endswith("CPU:0")
    assert nodes["b"].input == ["a/_1", "_arg_p_0_0/_3"]


def test_graph_def_round_trips_through_a_dict():
    g = GraphDef([NodeDef("a", "Const", "/cpu:0", [], {"dtype": {"dtype": "float32"}})])
    assert GraphDef.from_dict(g.to_dict()) == g
