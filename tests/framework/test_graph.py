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
    assert (a * b).op.name == "mul" and tf.multiply(a, b).op.name == "Mul_1"


def test_names_that_differ_only_in_case_are_uniquified_together():
    a = tf.constant(1.0)
    names = [(a + a).op.name, tf.add(a, a).op.name, (a + a).op.name, tf.add(a, a).op.name]
    assert names == ["add", "Add_1", "add_2", "Add_3"]      # TF's names, as TF 1.x gives


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
    assert v.name == "v:0"
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


def test_get_attr_class_on_an_op_without_colocation_is_a_value_error():
    a = tf.constant(1.0, name="a")
    with pytest.raises(ValueError, match=r"^Operation 'a' has no attr named '_class'\.\nHint:"):
        a.op.get_attr("_class")
    assert a.op.colocation_groups() == [b"loc:@a"]


def test_get_attr_class_lists_the_colocation_groups_of_a_colocated_op():
    a = tf.constant(1.0, name="a")
    with tf.colocate_with(a):
        b = tf.identity(a)
    assert b.op.get_attr("_class") == [b"loc:@a"]


def test_control_dependency_that_is_already_a_data_input_is_dropped():
    x = tf.constant(1.0, name="x")
    y = tf.constant(2.0, name="y")
    with tf.control_dependencies([x]):
        c = tf.add(x, y)
        e = tf.identity(y)
    assert c.op.control_inputs == [] and e.op.control_inputs == [x.op]


def test_control_dependencies_skip_an_op_whose_input_was_built_in_the_same_block():
    x = tf.constant(1.0, name="x")
    y = tf.constant(2.0, name="y")
    with tf.control_dependencies([x]):
        e = tf.identity(y)
        d = tf.identity(e)
        with tf.control_dependencies([y]):
            f = tf.identity(e)
    assert d.op.control_inputs == []
    assert f.op.control_inputs == [y.op]          # only the inner block still applies


def test_control_dependencies_already_in_an_outer_block_are_not_repeated():
    a = tf.constant(0.0, name="a")
    x = tf.constant(1.0, name="x")
    y = tf.constant(2.0, name="y")
    with tf.control_dependencies([y, x.op, x]), tf.control_dependencies([x]):
        k = tf.identity(a)
    assert k.op.control_inputs == [y.op, x.op]


def test_control_dependencies_none_clears_the_outer_blocks():
    x = tf.constant(1.0, name="x")
    with tf.control_dependencies([x]):
        with tf.control_dependencies(None):
            n = tf.constant(2.0)
        m = tf.identity(n)
    assert n.op.control_inputs == [] and m.op.control_inputs == [x.op]


@pytest.mark.parametrize("name", ["foo:0", "_foo", "-foo", "/foo", "foo bar"])
def test_invalid_root_name_scope_is_a_value_error(name):
    with pytest.raises(ValueError, match=f"^'{name}' is not a valid root scope name. A root "
                                         "scope name has to match the following pattern"), \
            tf.name_scope(name):
        pass


@pytest.mark.parametrize("name", ["_foo", "-foo", "/foo", ".foo"])
def test_nested_name_scope_may_start_with_underscore_dash_or_slash(name):
    with tf.name_scope("outer"), tf.name_scope(name) as scope:
        assert scope == f"outer/{name}/"


def test_invalid_nested_name_scope_is_a_value_error():
    with tf.name_scope("outer"), \
            pytest.raises(ValueError, match=r"^'foo:0' is not a valid scope name\. A scope "
                                            r"name has to match the following pattern: "
                                            r"\^\[A-Za-z0-9_\.\\\\/>-\]\*\$\nHint:"), \
            tf.name_scope("foo:0"):
        pass


def test_variable_scope_with_an_invalid_root_name_is_a_value_error():
    with pytest.raises(ValueError, match="'_v' is not a valid root scope name"), \
            tf.variable_scope("_v"):
        pass


def test_get_collection_scope_is_a_regex_matched_at_the_start_of_names():
    names = ["tower_0/w", "tower_1/w", "tower_2/w", "atower_0/w", "a/b"]
    for n in names:
        tf.add_to_collection("vars", tf.constant(0.0, name=n))
    tf.add_to_collection("vars", 7)                      # nameless items are skipped

    def found(scope):
        return [t.op.name for t in tf.get_collection("vars", scope)]
    assert found("tower_[01]") == ["tower_0/w", "tower_1/w"]
    assert found("a.*") == ["atower_0/w", "a/b"]
    assert found("w") == []                              # re.match: anchored at the start
    assert found("") == names
