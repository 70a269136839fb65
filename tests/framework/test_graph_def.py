"""Graphs as TF GraphDef protobufs (without TensorFlow): export, import, write_graph, and
TensorBoard event files."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.errors import NotFoundError
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb


def _model():
    """A small training graph: placeholder, variable, dense layer, loss, one SGD step."""
    with tf.device("/cpu:0"):
        x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable(np.array([[1.0, -1.0], [0.5, 2.0]], np.float32), name="w")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    logits = tf.matmul(x, w, name="logits")
    loss = tf.reduce_mean(tf.square(logits - tf.one_hot(labels, 2)), name="loss")
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, name="train")
    return x, labels, loss, train


FEED = {"x:0": np.array([[1.0, 2.0], [3.0, -1.0]], np.float32), "labels:0": np.array([0, 1])}


def _loss_after_a_step(graph, prefix=""):
    with tf.Session(graph=graph) as sess:
        sess.run(prefix + "init")
        feed = {prefix + k: v for k, v in FEED.items()}
        sess.run(prefix + "train", feed)
        return sess.run(prefix + "loss:0", feed)


def _built():
    _model()
    tf.global_variables_initializer()
    return tf.get_default_graph()


def test_a_node_has_tfs_fields_and_attrs():
    tf.constant([1.0, 2.0], name="c")
    node = tf.get_default_graph().as_graph_def().node[0]
    assert (node.name, node.op) == ("c", "Const")
    assert node.attr["dtype"].type == pb.DT_FLOAT
    assert node.attr["value"].tensor.tensor_content == np.float32([1, 2]).tobytes()


def test_inputs_name_output_zero_by_the_node_and_control_inputs_with_a_caret():
    halves = tf.split(tf.constant([1.0, 2.0]), 2)
    first = tf.no_op(name="first")
    with tf.control_dependencies([first]):
        tf.add(halves[0], halves[1], name="sum")
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def().node}
    assert list(nodes["sum"].input) == ["split", "split:1", "^first"]


def test_type_attrs_tf_infers_are_written_and_tfteach_only_attrs_are_not():
    x = tf.constant([[1.0, 2.0]])
    tf.reduce_sum(x, axis=1, name="sum")
    tf.argmax(x, 1, name="argmax")
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def().node}
    assert nodes["sum"].attr["Tidx"].type == pb.DT_INT32
    assert "keep_dims" not in nodes["argmax"].attr


def test_one_hot_takes_its_depth_from_a_const_node_as_in_tf():
    tf.one_hot(tf.constant([0, 2]), 3, name="hot")
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def().node}
    assert nodes["hot"].input[1] == "hot/depth"
    assert nodes["hot/depth"].attr["value"].tensor.int_val == [3]
    assert "depth" not in nodes["hot"].attr


def test_colocation_is_written_as_tfs_class_attr():
    tf.Variable(1.0, name="v")
    nodes = {n.name: n for n in tf.get_default_graph().as_graph_def().node}
    assert list(nodes["v/read"].attr["_class"].list.s) == [b"loc:@v"]


def test_an_imported_graph_def_computes_what_the_original_computes():
    graph = _built()
    expected = _loss_after_a_step(graph)
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(graph.as_graph_def(), name="")
    assert _loss_after_a_step(copy) == pytest.approx(expected)


def test_a_graph_def_goes_out_the_same_after_an_import():
    graph_def = _built().as_graph_def()
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(graph_def, name="")
    assert copy.as_graph_def() == graph_def


def test_import_puts_nodes_under_a_unique_name_scope():
    graph_def = _built().as_graph_def()
    target = tf.Graph()
    with target.as_default():
        tf.import_graph_def(graph_def)
        tf.import_graph_def(graph_def)
    assert target.get_operation_by_name("import/w").type == "VariableV2"
    assert target.get_operation_by_name("import_1/w/read").colocation_groups() == \
        [b"loc:@import_1/w"]
    assert _loss_after_a_step(target, "import/") == _loss_after_a_step(target, "import_1/")


def test_input_map_and_return_elements_connect_the_import_to_the_graph():
    a = tf.placeholder(tf.float32, [], name="a")
    tf.multiply(a, 3.0, name="triple")
    graph_def = tf.get_default_graph().as_graph_def()
    tf.reset_default_graph()
    five = tf.constant(5.0)
    out, op = tf.import_graph_def(graph_def, input_map={"a:0": five},
                                  return_elements=["triple:0", "triple"])
    assert op is out.op and out.name == "import/triple:0"
    with tf.Session() as sess:
        assert sess.run(out) == 15.0


def test_mapping_an_input_the_graph_def_lacks_is_a_value_error():
    graph_def = _built().as_graph_def()
    with pytest.raises(ValueError, match=r"not found in graph_def: \[nope:0\]"):
        tf.import_graph_def(graph_def, input_map={"nope:0": tf.constant(1.0)})


def test_an_op_type_tfteach_lacks_is_not_found_with_the_list_of_types():
    graph_def = pb.GraphDef()
    graph_def.node.add(name="c", op="Conv3D")
    with pytest.raises(NotFoundError, match="Op type not registered 'Conv3D'") as info:
        tf.import_graph_def(graph_def)
    assert "MatMul" in info.value.hint


def test_a_graph_def_with_a_cycle_is_refused():
    graph_def = pb.GraphDef()
    graph_def.node.add(name="a", op="Identity", input=["b"])
    graph_def.node.add(name="b", op="Identity", input=["a"])
    with pytest.raises(ValueError, match="cycle"):
        tf.import_graph_def(graph_def)


def test_write_graph_writes_text_that_parses_back(tmp_path):
    from google.protobuf import text_format
    graph = _built()
    path = tf.train.write_graph(graph, str(tmp_path / "out"), "graph.pbtxt")
    parsed = text_format.Parse((tmp_path / "out/graph.pbtxt").read_text(), pb.GraphDef())
    assert path == str(tmp_path / "out/graph.pbtxt") and parsed == graph.as_graph_def()


def test_write_graph_writes_binary_when_not_as_text(tmp_path):
    graph = _built()
    tf.train.write_graph(graph.as_graph_def(), str(tmp_path), "graph.pb", as_text=False)
    assert pb.GraphDef.FromString((tmp_path / "graph.pb").read_bytes()) == graph.as_graph_def()


# ---------------------------------------------------------------- event files

def _events(writer):
    return list(tf.summary.summary_iterator(writer.path))


def test_an_event_file_starts_with_the_file_version_then_the_graph(tmp_path):
    graph = _built()
    with tf.summary.FileWriter(str(tmp_path), graph) as writer:
        pass
    first, second = _events(writer)
    assert first.file_version == "brain.Event:2"
    nodes = pb.GraphDef.FromString(second.graph_def).node
    assert {n.name for n in nodes} == {op.name for op in graph.get_operations()} | \
        {"one_hot/depth"}


def test_the_event_files_graph_shows_where_the_session_placed_each_op(tmp_path):
    _built()
    with tf.Session() as sess:
        placed = sess.placement().devices
        writer = tf.summary.FileWriter(str(tmp_path), sess.graph)
    nodes = {n.name: n for n in pb.GraphDef.FromString(_events(writer)[1].graph_def).node}
    assert nodes["x"].device == placed["x"].name
    assert nodes["w"].device == placed["w"].name != ""


def test_without_a_session_the_event_files_graph_has_the_requested_devices(tmp_path):
    graph = _built()
    writer = tf.summary.FileWriter(str(tmp_path), graph)
    nodes = {n.name: n for n in pb.GraphDef.FromString(_events(writer)[1].graph_def).node}
    assert nodes["x"].device == "/device:CPU:0" and nodes["w"].device == ""


def test_summaries_are_written_at_their_step(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    value = tf.summary.Summary.Value(tag="loss", simple_value=0.25)
    writer.add_summary(tf.summary.Summary(value=[value]), global_step=7)
    event = _events(writer)[1]
    assert event.step == 7 and event.summary.value[0].simple_value == 0.25


def test_a_closed_writer_refuses_events_until_reopened(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.add_summary(tf.summary.Summary())
    writer.reopen()
    writer.add_summary(tf.summary.Summary())
    assert len(_events(writer)) == 2
