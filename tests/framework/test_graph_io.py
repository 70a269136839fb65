"""Graph serialization: a round trip keeps names, devices, attrs, colocation and results."""
import json

import numpy as np
import pytest

import tfteach as tf
from tfteach.framework.graph_io import graph_from_json, graph_to_json


def test_round_trip_runs_the_same_program():
    with tf.device("/cpu:0"):
        v = tf.Variable([[1.0, 2.0]], name="v")
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    with tf.device("/gpu:1"):
        y = tf.reduce_sum(x * v, axis=1, name="y")
    ctl = tf.no_op(name="ctl")
    with tf.control_dependencies([ctl]):
        z = tf.identity(y, name="z")
    g = tf.get_default_graph()
    data = graph_to_json(g.get_operations())
    g2 = graph_from_json(data)
    assert [(o.name, o.type, o.device) for o in g2.get_operations()] == \
           [(o.name, o.type, o.device) for o in g.get_operations()]
    assert g2.get_operation_by_name("v/read").colocation_groups() == [b"loc:@v"]
    assert [c.name for c in g2.get_operation_by_name("z").control_inputs] == ["ctl"]
    sess = tf.Session(graph=g2)
    sess.run(g2.get_operation_by_name("v/Assign"))
    out = sess.run("z:0", {"x:0": [[1.0, 1.0], [2.0, 0.0]]})
    assert out.tolist() == [3.0, 2.0]


def test_graph_def_is_plain_json_without_pickle():
    tf.constant(np.arange(6, dtype=np.int64).reshape(2, 3), name="c")
    gdef = json.loads(graph_to_json(tf.get_default_graph().get_operations()))
    assert gdef["node"][0]["attr"]["value"]["shape"] == [2, 3]


@pytest.mark.parametrize("bad", [b"not json", b"[]", b'{"version": 9, "node": []}'])
def test_malformed_graph_defs_are_value_errors(bad):
    with pytest.raises(ValueError):
        graph_from_json(bad)
