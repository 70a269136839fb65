"""tf.gradients as TF 1.x defines it: sums over consumers, None when unconnected,
stop_gradient, grad_ys, names under gradients/, and where the gradient ops are placed."""
import numpy as np
import pytest

import tfteach as tf


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def test_gradients_from_several_consumers_are_summed():
    x = tf.constant(3.0)
    y = x * x + 2.0 * x
    (g,) = tf.gradients(y, [x])
    assert _run(g) == pytest.approx(2 * 3.0 + 2.0)
    assert g.op.type == "AddN"


def test_an_unconnected_x_gets_none():
    x = tf.constant(1.0)
    unrelated = tf.constant(2.0)
    grads = tf.gradients(x * 3.0, [x, unrelated])
    assert grads[1] is None
    assert _run(grads[0]) == 3.0


def test_stop_gradient_blocks_the_path_through_it():
    x = tf.constant(2.0)
    y = x * x + tf.stop_gradient(x * x)
    (g,) = tf.gradients(y, x)
    assert _run(g) == 4.0
    assert tf.gradients(tf.stop_gradient(x) * 5.0, x) == [None]


def test_stop_gradients_argument_treats_tensors_as_constants():
    a = tf.constant(1.0)
    b = 2.0 * a
    ga, gb = tf.gradients(a + b, [a, b], stop_gradients=[a, b])
    assert _run([ga, gb]) == [1.0, 1.0]


def test_grad_ys_weights_each_y():
    x = tf.constant([1.0, 2.0])
    (g,) = tf.gradients([x * 2.0, x * x], x, grad_ys=[tf.constant([1.0, 1.0]),
                                                      tf.constant([10.0, 0.0])])
    np.testing.assert_allclose(_run(g), [2.0 + 10.0 * 2.0, 2.0])


def test_gradient_with_respect_to_a_variable_uses_its_value():
    w = tf.Variable([[1.0, 2.0]], name="w")
    x = tf.constant([[3.0], [4.0]])
    loss = tf.reduce_sum(tf.matmul(w, x))
    (g,) = tf.gradients(loss, w)
    np.testing.assert_allclose(_run(g), [[3.0, 4.0]])


def test_integer_paths_give_no_gradient():
    x = tf.constant(2.5)
    y = tf.cast(tf.cast(x, tf.int32), tf.float32)
    assert tf.gradients(y, x) == [None]


def test_an_op_with_no_gradient_on_the_path_is_a_lookup_error():
    x = tf.constant([1.0, 2.0])      # TF registers no gradient for TruncateMod either
    with pytest.raises(LookupError, match="No gradient defined for operation 'TruncateMod' "
                                          r"\(op type: TruncateMod\)[\s\S]*Hint:"):
        tf.gradients(tf.reduce_sum(tf.truncatemod(x, 1.5)), x)


def test_gradient_ops_are_named_under_gradients_scopes():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.Variable(tf.ones([3, 2]), name="w")
    loss = tf.reduce_sum(tf.matmul(x, w, name="MatMul"))
    (g,) = tf.gradients(loss, w)
    assert g.name == "gradients/MatMul_grad/MatMul_1:0"
    (g2,) = tf.gradients(loss, w)
    assert g2.name.startswith("gradients_1/")
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert "gradients/grad_ys_0" in names                  # the seed: ones like the loss
    tf.gradients(tf.matmul(x, w), w)                       # a y of unknown shape
    assert tf.get_default_graph().get_operation_by_name("gradients_2/Fill").type == "Fill"


def test_gradient_ops_take_the_current_device_scope():
    with tf.device("/cpu:0"):
        x = tf.constant([[1.0, 2.0]])
        w = tf.Variable([[1.0], [1.0]])
        y = tf.matmul(x, w)
    with tf.device("/gpu:1"):
        (g,) = tf.gradients(y, w)
    assert g.op.device == "/device:GPU:1"
    np.testing.assert_allclose(_run(g), [[1.0], [2.0]])


def test_colocate_gradients_with_ops_places_them_beside_their_forward_op():
    x = tf.constant([[1.0, 2.0]])
    with tf.device("/gpu:1"):
        w = tf.Variable([[1.0], [1.0]], name="w")
        y = tf.matmul(x, w, name="fwd")
    with tf.device("/cpu:0"):
        (g,) = tf.gradients(y, w, colocate_gradients_with_ops=True)
    assert g.op.device == "/device:GPU:1"
    assert g.op.get_attr("_class") == [b"loc:@fwd"]
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(g, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
    assert meta.placement[g.op.name].endswith("device:GPU:1")


def _two_device_consumers():
    """w feeds a on gpu:0 and b (twice) on cpu:0: its gradient has parts on two devices."""
    with tf.device("/gpu:1"):
        x = tf.placeholder(tf.float32, [3], name="x")
        w = tf.Variable([1.0, 2.0, 3.0], name="w")
    with tf.device("/gpu:0"):
        a = tf.multiply(w, x, name="a")
    with tf.device("/cpu:0"):
        y = tf.reduce_sum(a + tf.multiply(w, w, name="b"), name="y")
    return x, w, y


def test_colocated_gradient_sums_each_device_beside_its_parts_then_beside_the_op():
    x, w, y = _two_device_consumers()
    (g,) = tf.gradients(y, w, colocate_gradients_with_ops=True)
    assert g.op.type == "AddN" and g.op.name == "gradients/AddN_1"
    assert g.op.get_attr("_class") == [b"loc:@w"] and g.op.device == "/device:GPU:1"
    part = g.op.inputs[0].op                       # cpu:0's two parts, summed beside b
    assert part.type == "AddN" and part.get_attr("_class") == [b"loc:@b"]
    assert part.device == "/device:CPU:0"
    np.testing.assert_allclose(_run(g, {x: [1.0, 1.0, 1.0]}), [3.0, 5.0, 7.0])


def test_gradient_sum_on_one_device_is_colocated_with_its_first_part():
    a = tf.constant(3.0, name="a")
    with tf.device("/cpu:0"):
        (g,) = tf.gradients(a * a, a)
    assert g.op.type == "AddN" and g.op.device == "/device:CPU:0"
    assert g.op.get_attr("_class") == [f"loc:@{g.op.inputs[0].op.name}".encode()]
    assert _run(g) == pytest.approx(6.0)


@pytest.mark.parametrize("how", [tf.UnconnectedGradients.ZERO, "zero"])
def test_unconnected_gradients_zero_gives_zeros_shaped_like_x(how):
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    w = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="w")
    v = tf.Variable(tf.ones([2, 3]), name="v")
    i = tf.constant([1, 2], name="i")
    y = tf.reduce_sum(x * 2.0)
    gx, gw, gv, gi = tf.gradients(y, [x, w, v, i], unconnected_gradients=how)
    assert gw.op.name == "zeros_like" and gi.dtype == tf.int32
    out = _run([gx, gw, gv, gi], {x: [[1.0, 2.0, 3.0]]})
    np.testing.assert_allclose(out[0], [[2.0, 2.0, 2.0]])
    np.testing.assert_array_equal(out[1], np.zeros((2, 2)))
    np.testing.assert_array_equal(out[2], np.zeros((2, 3)))
    np.testing.assert_array_equal(out[3], [0, 0])


@pytest.mark.parametrize("how", [tf.UnconnectedGradients.NONE, "none"])
def test_unconnected_gradients_none_gives_none(how):
    x = tf.constant(1.0)
    y = tf.constant(2.0) * 3.0
    assert tf.gradients(y, [x], unconnected_gradients=how) == [None]


def test_unknown_unconnected_gradients_is_a_value_error():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="^Unknown value for unconnected_gradients: 'ZERO'\n"):
        tf.gradients(x * 2.0, [x], unconnected_gradients="ZERO")


def test_gate_gradients_makes_an_ops_input_gradients_wait_for_each_other():
    a = tf.Variable([[1.0, 2.0]])
    b = tf.Variable([[3.0], [4.0]])
    y = tf.matmul(a, b, name="mm")
    ga, gb = tf.gradients(y, [a, b], gate_gradients=True)
    assert ga.op.name == "gradients/mm_grad/tuple/control_dependency"
    assert gb.op.name == "gradients/mm_grad/tuple/control_dependency_1"
    assert ga.op.control_inputs[0].name == "gradients/mm_grad/tuple/group_deps"
    np.testing.assert_allclose(_run(ga), [[3.0, 4.0]])


def test_broadcast_add_gradient_is_summed_back_to_each_shape():
    x = tf.placeholder(tf.float32, [None, 3])
    b = tf.Variable([0.0, 0.0, 0.0])
    gx, gb = tf.gradients(tf.reduce_sum(x + b), [x, b])
    assert gb.shape.as_list() == [3]
    got = _run([gx, gb], {x: np.ones((4, 3))})
    np.testing.assert_allclose(got[1], [4.0, 4.0, 4.0])
    assert got[0].shape == (4, 3)


def test_cross_entropy_gradient_is_finite_at_huge_logits():
    logits = tf.Variable([[1e4, -1e4, 0.0], [0.0, 0.0, 1e4]])
    labels = tf.constant([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels,
                                                                      logits=logits))
    (g,) = tf.gradients(loss, logits)
    value, grad = _run([loss, g])
    assert np.isfinite(value) and value == pytest.approx(1e4 + 2e4 / 2 - 5e3, rel=1e-6)
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, [[0.5, -0.5, 0.0], [-0.5, 0.0, 0.5]], atol=1e-6)
