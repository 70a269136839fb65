"""Session.run: fetch structures, feeds, errors, plan caching and lifecycle."""
import collections

import numpy as np
import pytest

import tfteach as tf


def test_nested_fetches_keep_their_structure():
    a, b = tf.constant(1.0), tf.constant(2.0)
    Pair = collections.namedtuple("Pair", "x y")
    out = tf.Session().run({"a": a, "pair": Pair(a, b), "list": [b, (a,)], "op": a.op})
    assert out == {"a": 1.0, "pair": Pair(1.0, 2.0), "list": [2.0, (1.0,)], "op": None}


def test_fetch_by_name():
    tf.constant(3.0, name="c")
    assert tf.Session().run("c:0") == 3.0


def test_feed_placeholder_and_any_tensor():
    x = tf.placeholder(tf.float32, [None, 2])
    y = x * 2.0
    z = y + 1.0
    sess = tf.Session()
    assert sess.run(z, {x: [[1, 2]]}).tolist() == [[3.0, 5.0]]
    assert sess.run(z, {y: [[10, 20]]}).tolist() == [[11.0, 21.0]]   # feeding an inner tensor


def test_missing_feed_is_tf_error():
    x = tf.placeholder(tf.float32, [None, 784])
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.Session().run(x * 2.0)
    assert ("You must feed a value for placeholder tensor 'Placeholder' with dtype float and "
            "shape [?,784]") in str(e.value)
    assert "Hint:" in str(e.value)


def test_feed_shape_mismatch():
    x = tf.placeholder(tf.float32, [None, 784])
    with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3,\) for Tensor "
                                         r"'Placeholder:0', which has shape '\(\?, 784\)'"):
        tf.Session().run(x, {x: [1, 2, 3]})


def test_feed_int_overflow_is_type_error():
    x = tf.placeholder(tf.int32, [])
    with pytest.raises(TypeError, match="not compatible"):
        tf.Session().run(x, {x: 2 ** 40})


def test_fetch_from_another_graph():
    g = tf.Graph()
    with g.as_default():
        c = tf.constant(1.0)
    tf.constant(2.0)
    with pytest.raises(ValueError, match="is not an element of this graph"):
        tf.Session().run(c)


def test_closed_session_refuses_runs():
    c = tf.constant(1.0)
    with tf.Session() as sess:
        assert sess.run(c) == 1.0
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)


def test_context_manager_makes_default_session_for_eval():
    c = tf.constant(4.0)
    with tf.Session():
        assert c.eval() == 4.0
    with pytest.raises(ValueError, match="No default session"):
        c.eval()


def test_interactive_session_is_default():
    c = tf.constant(5.0)
    sess = tf.InteractiveSession()
    try:
        assert c.eval() == 5.0
    finally:
        sess.close()


def test_plan_is_cached_per_fetch_feed_target():
    x = tf.placeholder(tf.float32, [])
    y = x + 1.0
    sess = tf.Session()
    sess.run(y, {x: 1.0})
    plan = sess._plans[next(iter(sess._plans))]
    sess.run(y, {x: 2.0})
    assert len(sess._plans) == 1 and sess._plans[next(iter(sess._plans))] is plan
    sess.run([y, x], {x: 2.0})
    assert len(sess._plans) == 2


def test_graph_growth_replaces_but_keeps_stateful_devices():
    v = tf.Variable(1.0, name="v")
    sess = tf.Session()
    sess.run(v.initializer)
    first = sess.placement().devices["v"].name
    with tf.device("/cpu:0"):
        w = v * 3.0
    assert sess.run(w) == 3.0
    assert sess.placement().devices["v"].name == first


def test_list_devices():
    names = [d.name for d in tf.Session().list_devices()]
    assert names == ["/job:localhost/replica:0/task:0/device:CPU:0",
                     "/job:localhost/replica:0/task:0/device:GPU:0",
                     "/job:localhost/replica:0/task:0/device:GPU:1"]


def test_empty_graph_run_is_an_error():
    with pytest.raises(RuntimeError, match="graph is empty"):
        tf.Session().run([])


def test_kernel_error_names_the_op():
    x = tf.placeholder(tf.int32, [None])
    y = tf.reshape(x, [3])   # fine at construction (unknown size), fails at run time
    with pytest.raises(tf.errors.OpError) as e:
        tf.Session().run(y, {x: [1, 2]})
    assert "Reshape" in str(e.value)


def test_split_into_one_part_gives_an_array():
    x = tf.placeholder(tf.float32, [None, 2])
    (p,) = tf.split(x, 1)
    out = tf.Session().run(p * 2.0, {x: [[1.0, 2.0]]})
    assert out.tolist() == [[2.0, 4.0]]


def test_colocate_with_a_variable():
    with tf.device("/cpu:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/gpu:1"), tf.colocate_with(v):
        w = tf.identity(v, name="w")
    assert w.op.device == "/device:CPU:0" and w.op.colocation_groups() == [b"loc:@v"]


def test_oom_leaves_the_memory_accounting_right():
    from tfteach import config
    config.set_virtual_gpus(1, memory_limit_mb=64)
    with tf.device("/gpu:0"):
        v = tf.Variable(tf.zeros([4 << 20]))          # 16 MiB kept
        big = tf.fill([8 << 20], 1.0) + tf.reduce_max(v)   # 32 MiB
        y = big * 2.0 + big                           # two more 32 MiB: over 64 MiB
    sess = tf.Session()
    sess.run(v.initializer)
    dev = [d for d in sess.devices if d.device_type == "GPU"][0]
    kept = dev.memory.used
    with pytest.raises(tf.errors.ResourceExhaustedError):
        sess.run(y)
    assert dev.memory.used == kept
