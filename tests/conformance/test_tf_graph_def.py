"""Conformance: GraphDefs go both ways between tfteach and TensorFlow, and TF reads the
event files tfteach writes for TensorBoard.

A graph tfteach built imports into TF and computes the same values (training step
included); a graph TF built, of ops tfteach has, imports into tfteach and computes the
same values; ``write_graph``'s text parses into TF's GraphDef; TF's ``summary_iterator``
reads ``FileWriter``'s events and finds the graph."""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

FEED = {"x:0": np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], np.float32),
        "labels:0": np.array([0, 1, 1], np.int32)}


@pytest.fixture(autouse=True)
def fresh_graphs():
    tf1.reset_default_graph()
    tfteach.reset_default_graph()


def _model(tf):
    """A small classifier with one SGD step, built the same way on either runtime."""
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    labels = tf.placeholder(tf.int32, [None], name="labels")
    w = tf.Variable(np.array([[1.0, -1.0], [0.5, 2.0]], np.float32), name="w")
    b = tf.Variable(np.zeros(2, np.float32), name="b")
    logits = tf.nn.relu(tf.matmul(x, w) + b)
    probs = tf.nn.softmax(logits)
    loss = tf.reduce_mean(tf.reduce_sum(tf.square(probs - tf.one_hot(labels, 2)), axis=1),
                          name="loss")
    tf.argmax(logits, 1, name="prediction")
    tf.train.GradientDescentOptimizer(0.5).minimize(loss, name="train")
    tf.global_variables_initializer()


def _run(tf, graph) -> list:
    """Loss and prediction before and after two training steps."""
    with tf.Session(graph=graph) as sess:
        sess.run("init")
        before = sess.run(["loss:0", "prediction:0"], FEED)
        sess.run("train", FEED)
        sess.run("train", FEED)
        return before + sess.run(["loss:0", "prediction:0", "w:0"], FEED)


def _assert_close(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def _tf_graph_def(graph_def):
    return tf1.GraphDef.FromString(graph_def.SerializeToString())


def test_a_graph_tfteach_built_imports_into_tensorflow_and_computes_the_same():
    _model(tfteach)
    graph = tfteach.get_default_graph()
    theirs = tf1.Graph()
    with theirs.as_default():
        tf1.import_graph_def(_tf_graph_def(graph.as_graph_def()), name="")
    _assert_close(_run(tfteach, graph), _run(tf1, theirs))


def test_a_graph_tensorflow_built_imports_into_tfteach_and_computes_the_same():
    _model(tf1)
    graph_def = tf1.get_default_graph().as_graph_def()
    ours = tfteach.Graph()
    with ours.as_default():
        tfteach.import_graph_def(graph_def, name="")
    _assert_close(_run(tfteach, ours), _run(tf1, tf1.get_default_graph()))


def test_write_graphs_text_parses_into_tensorflows_graph_def(tmp_path):
    from google.protobuf import text_format
    _model(tfteach)
    graph = tfteach.get_default_graph()
    path = tfteach.train.write_graph(graph, str(tmp_path), "graph.pbtxt")
    with open(path) as f:
        parsed = text_format.Parse(f.read(), tf1.GraphDef())
    assert parsed == _tf_graph_def(graph.as_graph_def())


def test_tfteach_writes_the_same_bytes_as_tensorflow_for_the_same_node():
    tfteach.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="c")
    tf1.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="c")
    ours = tfteach.get_default_graph().as_graph_def().node[0]
    theirs = tf1.get_default_graph().as_graph_def().node[0]
    assert ours.SerializeToString(deterministic=True) == \
        theirs.SerializeToString(deterministic=True)


def test_tensorflows_summary_iterator_reads_the_graph_and_summaries_tfteach_wrote(tmp_path):
    _model(tfteach)
    with tfteach.Session() as sess:
        writer = tfteach.summary.FileWriter(str(tmp_path), sess.graph)
    value = tfteach.summary.Summary.Value(tag="loss", simple_value=0.5)
    writer.add_summary(tfteach.summary.Summary(value=[value]), global_step=3)
    writer.close()
    events = list(tf1.train.summary_iterator(writer.path))
    assert events[0].file_version == "brain.Event:2"
    graph_def = tf1.GraphDef.FromString(events[1].graph_def)
    devices = {n.name: n.device for n in graph_def.node}
    assert devices["w"].startswith("/job:localhost/replica:0/task:0/device:")
    assert (events[2].step, events[2].summary.value[0].simple_value) == (3, 0.5)


def test_tensorflow_imports_the_graph_of_tfteachs_event_file(tmp_path):
    _model(tfteach)
    writer = tfteach.summary.FileWriter(str(tmp_path), tfteach.get_default_graph())
    writer.close()
    graph_def = tf1.GraphDef.FromString(list(tf1.train.summary_iterator(writer.path))[1]
                                        .graph_def)
    with tf1.Graph().as_default() as graph:
        tf1.import_graph_def(graph_def, name="")
    assert graph.get_operation_by_name("train").type == "NoOp"
