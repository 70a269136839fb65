"""``op.node_def`` is TF's ``NodeDef`` protobuf, so device functions written for TF 1.x
(``op.node_def.op``, ``.device``, ``.attr[...]``) run unchanged: compared with TensorFlow's
``compat.v1``."""
import pytest

import tfteach
from tf_oracle import tf1

pytestmark = pytest.mark.conformance
BOTH = pytest.mark.parametrize("tf", [tfteach, tf1], ids=["tfteach", "tensorflow"])
TF2_ONLY = {"grad_a", "grad_b"}
PS_OPS = ["Variable", "VariableV2", "VarHandleOp"]


def _assign_to_device(tf, device, ps_device="/cpu:0"):
    """The multi-GPU tutorials' device function."""
    def _assign(op):
        node_def = op if isinstance(op, tf.NodeDef) else op.node_def
        return ps_device if node_def.op in PS_OPS else device
    return _assign


def _placed(tf):
    with tf.Graph().as_default() as g:
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device(_assign_to_device(tf, "/gpu:1")):
            w = tf.Variable(tf.ones([3, 2]), name="w")
            tf.matmul(x, w, name="y")
        return {op.name: tf.DeviceSpec.from_string(op.device).to_string()
                for op in g.get_operations()}


def test_a_device_function_reading_node_def_op_places_as_tf_does():
    assert _placed(tfteach) == _placed(tf1)
    assert _placed(tfteach)["w"] == "/device:CPU:0"


def _node_defs(tf):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        with tf.device("/cpu:0"):
            w = tf.Variable(tf.ones([3, 2]), name="w")
        with tf.control_dependencies([w.initializer]):
            y = tf.matmul(x, w, transpose_b=False, name="y")
        with tf.colocate_with(w.op):
            sq = tf.square(w, name="sq")
        return {op.name: (type(op.node_def).__name__, op.node_def.name, op.node_def.op,
                          list(op.node_def.input),
                          tf.DeviceSpec.from_string(op.node_def.device).to_string(),
                          sorted(op.node_def.attr))
                for op in (x.op, w.op, y.op, sq.op)}, y.op.node_def, sq.op.node_def


def test_node_def_has_tfs_fields():
    ours, y_ours, sq_ours = _node_defs(tfteach)
    theirs, y_tf, sq_tf = _node_defs(tf1)
    for name, ((*fields, attrs), (*tf_fields, tf_attrs)) in \
            {n: (ours[n], theirs[n]) for n in ours}.items():
        assert fields == tf_fields, name
        # TF 2 added attrs TF 1.x's graphs lack (MatMul's grad_a, grad_b)
        assert set(attrs) <= set(tf_attrs) and set(tf_attrs) - set(attrs) <= TF2_ONLY, name
    assert y_ours.attr["transpose_a"].b is False and y_ours.attr["T"].type == y_tf.attr["T"].type
    assert list(sq_ours.attr["_class"].list.s) == list(sq_tf.attr["_class"].list.s) == [b"loc:@w"]


def test_node_def_bytes_parse_as_tfs_node_def():
    with tfteach.Graph().as_default():
        c = tfteach.constant([1.0, 2.0], name="c")
        node = tf1.NodeDef.FromString(c.op.node_def.SerializeToString())
    assert (node.name, node.op) == ("c", "Const")
    assert list(tf1.make_ndarray(node.attr["value"].tensor)) == [1.0, 2.0]
