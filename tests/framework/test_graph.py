"""Graph, Operation and Tensor: names, scopes, collections, lookups and printing."""
import pytest

import tfteach as tf


def test_unique_names_follow_tf():
    names = [tf.constant(1.0, name=n).op.name for n in ("x", "x", "x_1", "x")]
    assert names == ["x", "x_1", "x_1_1", "x_2"]


def test_default_names_from_op_type():
    a = tf.constant(1.0)
    b = tf.constant(2.0)
    assert [tf.add(a, b).op.name, tf.add(a, b).op.name] == ["Add", "Add_1"]
    assert (a + b).op.name == "add" and (a * b).op.name == "mul"


def test_name_scope_twice_gets_suffix():
    with tf.name_scope("tower_0"):
        a = tf.constant(1.0, name="a")
    with tf.name_scope("tower_0"):
        b = tf.constant(1.0, name="a")
    assert (a.op.name, b.op.name) == ("tower_0/a", "tower_0_1/a")


def test_tensor_names_shapes_and_repr():
    x = tf.placeholder(tf.float32, [None, 784])
    w = tf.zeros([784, 10])
    y = tf.matmul(x, w)
    assert y.name == "MatMul:0"
    assert str(y.shape) == "(?, 10)"
    assert y.shape.as_list() == [None, 10]
    assert str(y) == 'Tensor("MatMul:0", shape=(?, 10), dtype=float32)'


def test_lookup_by_name_and_errors():
    g = tf.get_default_graph()
    c = tf.constant(3.0, name="c")
    assert g.get_tensor_by_name("c:0") is c
    assert g.get_operation_by_name("c") is c.op
    with pytest.raises(KeyError, match="does not exist"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="not in the graph"):
        g.get_operation_by_name("nope")


def test_finalize_blocks_new_ops():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1.0)
        g.finalize()
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2.0)


def test_inputs_from_another_graph_are_refused():
    g1, g2 = tf.Graph(), tf.Graph()
    with g1.as_default():
        a = tf.constant(1.0)
    with g2.as_default():
        b = tf.constant(1.0)
        with pytest.raises(ValueError, match="same graph"):
            tf.add(b, a)


def test_control_dependencies_and_group():
    a = tf.constant(1.0)
    with tf.control_dependencies([a]):
        b = tf.constant(2.0)
    assert b.op.control_inputs == [a.op]
    g = tf.group(a, b, name="both")
    assert g.type == "NoOp" and set(g.control_inputs) == {a.op, b.op}


def test_colocate_with_copies_device_and_class():
    with tf.device("/cpu:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/gpu:0"):
        with tf.colocate_with(v.op):
            w = tf.identity(v)
    assert w.op.device == "/device:CPU:0"
    assert w.op.colocation_groups() == [b"loc:@v"]


def test_variable_ops_are_tf_shaped():
    v = tf.Variable([1.0, 2.0], name="v")
    names = {op.name: op.type for op in tf.get_default_graph().get_operations()}
    assert names == {"v/initial_value": "Const", "v": "VariableV2", "v/Assign": "Assign",
                     "v/read": "Identity"}
    assert v.name == "v:0" and v.op.get_attr("_class") == []
    assert tf.get_default_graph().get_operation_by_name("v/read").colocation_groups() == [b"loc:@v"]
    assert v in tf.global_variables() and v in tf.trainable_variables()


def test_collections():
    tf.add_to_collection("mine", 1)
    tf.add_to_collection("mine", 2)
    assert tf.get_collection("mine") == [1, 2]


def test_str_prints_readable_ir_and_validate_passes():
    a = tf.constant(1.0, name="a")
    b = tf.add(a, a, name="b")
    g = tf.get_default_graph()
    text = str(g)
    assert "b = Add(a:0, a:0) -> float32[]" in text
    g.validate()


def test_validate_reports_a_broken_graph_with_its_printout():
    g = tf.get_default_graph()
    a = tf.constant(1.0, name="a")
    tf.constant(2.0, name="b")
    g._ops[1]._id = 7
    with pytest.raises(ValueError) as e:
        g.validate()
    assert "has id 7" in str(e.value) and "The graph:" in str(e.value) and "Hint:" in str(e.value)


def test_tensor_as_bool_is_refused():
    with pytest.raises(TypeError, match="not allowed"):
        bool(tf.constant(1.0))


def test_reset_default_graph_gives_a_new_graph():
    g = tf.get_default_graph()
    tf.reset_default_graph()
    assert tf.get_default_graph() is not g
