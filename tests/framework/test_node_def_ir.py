"""tfteach's one graph IR (``framework.node_def``): its dict form is graph_io's wire format,
its protobuf form is TF's, and the runtime's and the master's partition graphs are made of it."""
from __future__ import annotations

import numpy as np

import tfteach as tf
from tfteach.framework import graph_io
from tfteach.framework.node_def import GraphDef, NodeDef, source_of
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb


def _small_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        v = tf.Variable(np.arange(3, dtype=np.float32), name="v")
        y = tf.multiply(x, v, name="y")
        with tf.control_dependencies([v.initializer]):
            z = tf.reduce_sum(y, axis=[1], keepdims=True, name="z")
    return g, z


def _as_ir(g: tf.Graph) -> GraphDef:
    return GraphDef([NodeDef.from_dict(graph_io.node_to_dict(op)) for op in g.get_operations()])


def test_a_node_of_an_op_is_graph_ios_node_without_inputs():
    g, z = _small_graph()
    node = NodeDef.of(z.op, "/job:w/replica:0/task:0/device:CPU:0")
    expected = graph_io.node_to_dict(z.op, "/job:w/replica:0/task:0/device:CPU:0")
    assert node.to_dict() == {**expected, "input": [], "colocation": []}
    assert node.op_def.type == "Sum"


def test_dict_form_is_the_graph_def_the_wire_carries_and_reads_back():
    g, _ = _small_graph()
    ir = _as_ir(g)
    assert ir.to_dict() == graph_io.graph_to_dict(g.get_operations())
    assert GraphDef.from_dict(ir.to_dict()) == ir
    rebuilt = graph_io.graph_from_dict(ir.to_dict())
    assert [op.name for op in rebuilt.get_operations()] == [op.name for op in g.get_operations()]


def test_the_masters_mark_never_goes_on_the_wire():
    node = NodeDef("c", "Const", "/cpu:0", ["^a"], {"dtype": {"dtype": "float32"}},
                   carries_control=True)
    assert "carries_control" not in node.to_dict()
    assert NodeDef.from_dict(node.to_dict()).carries_control is False


def test_proto_form_keeps_dtypes_shapes_arrays_and_colocation():
    g, _ = _small_graph()
    ir = _as_ir(g)
    assert any(n.colocation for n in ir.node)            # v/read and v/Assign sit with v
    proto = pb.GraphDef.FromString(ir.SerializeToString())
    assert [n.name for n in proto.node] == [n.name for n in ir.node]
    read = next(n for n in proto.node if n.name == "v/read")
    assert list(read.attr["_class"].list.s) == [b"loc:@v"]
    assert GraphDef.from_proto(proto) == ir


def test_from_proto_leaves_out_attrs_tfteach_cannot_hold():
    node = pb.NodeDef(name="h", op="PartitionedCall", device="/cpu:0")
    node.attr["f"].func.name = "body"                    # a function: tfteach has none
    node.attr["shared_name"].s = b"h"
    assert NodeDef.from_proto(node).attr == {"shared_name": "h"}


def test_source_of_names_the_producing_node():
    assert [source_of(e) for e in ("x", "x:1", "^x", "scope/x:0")] == ["x", "x", "x", "scope/x"]


def test_run_metadata_partition_graphs_are_the_ir_and_serialize_as_tfs():
    with tf.Graph().as_default():
        with tf.device("/cpu:0"):
            a = tf.constant([1.0, 2.0], name="a")
        with tf.device("/gpu:0"):
            b = tf.multiply(a, 2.0, name="b")
        md = tf.RunMetadata()
        with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
            sess.run(b, options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
    assert md.partition_graphs and all(isinstance(g, GraphDef) for g in md.partition_graphs)
    nodes = [n for g in md.partition_graphs for n in g.node]
    assert {n.op for n in nodes} >= {"Const", "Mul", "_Retval"}
    for g in md.partition_graphs:
        assert GraphDef.from_proto(pb.GraphDef.FromString(g.SerializeToString())) == g
