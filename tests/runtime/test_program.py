"""Inline plans' straight-line programs: the same results with small constants and NoOps
folded, control dependencies kept, big constants still counted, every byte returned."""
import numpy as np
import pytest

import tfteach as tf

LOCAL = "/job:localhost/replica:0/task:0/device:"


def _gpu0(sess):
    return [d for d in sess.devices if d.name == LOCAL + "GPU:0"][0]


def _model():
    with tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        w = tf.Variable(np.ones((3, 2), np.float32), name="w")
        y = tf.matmul(x, w)
        ident = tf.identity(y, name="ident")
        c = tf.constant(2.0, name="two")
        out = ident * c
        grads = tf.gradients(tf.reduce_sum(out), [w])[0]
        train = tf.group(tf.assign_sub(w, 0.1 * grads))      # a NoOp: folded away
        with tf.control_dependencies([train]):
            after = tf.identity(w.read_value() if hasattr(w, "read_value") else w + 0.0)
    return x, w, ident, c, out, train, after


def test_fast_program_folds_small_constants_and_noops():
    x, w, ident, c, out, train, after = _model()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    plan = sess._plan([ident, c, out], [], {x: None})
    assert plan.run_inline
    full = {node.name for node, *_ in plan.full.instrs}
    fast = {node.name: node for node, *_ in plan.fast.instrs}
    assert {"two", "ident", "w/read"} <= full
    assert "two" not in fast
    assert "ident" in fast and "w/read" in fast
    assert len(plan.fast.instrs) < len(plan.full.instrs)


def test_folded_and_traced_runs_agree_and_fetch_folded_values():
    x, w, ident, c, out, train, after = _model()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    feed = {x: np.arange(6, dtype=np.float32).reshape(2, 3)}
    fast = sess.run([ident, c, out], feed)
    md = tf.RunMetadata()
    traced = sess.run([ident, c, out], feed, run_metadata=md,
                      options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
    for a, b in zip(fast, traced):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(fast[0], feed[x] @ np.ones((3, 2), np.float32))
    assert fast[1] == 2.0
    ran = {n.node_name for d in md.step_stats.dev_stats for n in d.node_stats}
    assert {"ident", "two"} <= ran          # a traced step shows every op


def test_control_dependency_through_a_folded_noop_still_orders_the_update():
    x, w, ident, c, out, train, after = _model()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    feed = {x: np.ones((1, 3), np.float32)}
    plan = sess._plan([after], [], {x: None})
    assert "NoOp" not in {node.type for node, *_ in plan.fast.instrs}
    got = sess.run(after, feed)
    # d(sum(2 * x @ w))/dw = 2 * x^T 1 = 2 everywhere; w = 1 - 0.1 * 2
    np.testing.assert_allclose(got, np.full((3, 2), 0.8, np.float32))


def test_every_byte_returns_to_the_device_after_success_and_failure():
    with tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None, 4])
        labels = tf.placeholder(tf.int64, [None])
        h = tf.identity(tf.nn.relu(x * 3.0))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=h))
    sess = tf.Session()
    dev = _gpu0(sess)
    before = dev.memory.used
    xs = np.ones((8, 4), np.float32)
    for _ in range(3):
        sess.run([loss, h], {x: xs, labels: np.zeros(8, np.int64)})
    assert dev.memory.used == before
    with pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(loss, {x: xs, labels: np.full(8, 9, np.int64)})
    assert dev.memory.used == before
    assert dev.memory.peak >= xs.nbytes


def test_a_big_constant_still_counts_against_the_device_while_the_step_uses_it():
    with tf.device("/gpu:0"):
        big = tf.ones([512, 512], name="big")           # 1 MiB: not folded
        total = tf.reduce_sum(big * 2.0)
    sess = tf.Session()
    plan = sess._plan([total], [], {})
    assert "big" in {node.name for node, *_ in plan.fast.instrs}
    dev = _gpu0(sess)
    assert sess.run(total) == 2.0 * 512 * 512
    assert dev.memory.peak >= 2 * 512 * 512 * 4            # big and big * 2 together


def test_an_error_inside_the_generated_program_names_its_node():
    """The fast program is one generated function: a kernel's error is still reported
    for the node that raised it (mapped from the function's line), not a neighbour."""
    with tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None], name="x")
        doubled = tf.multiply(x, 2.0, name="doubled")
        squashed = tf.reshape(doubled, [2, 2], name="squashed")
        out = tf.add(squashed, 1.0, name="after")
    sess = tf.Session()
    plan = sess._plan([out], [], {x: None})
    assert plan.fast.run is not None
    assert [n.name for n, *_ in plan.fast.instrs] == ["doubled", "squashed", "after"]
    dev = _gpu0(sess)
    before = dev.memory.used
    np.testing.assert_array_equal(sess.run(out, {x: np.arange(4, dtype=np.float32)}),
                                  [[1, 3], [5, 7]])
    with pytest.raises(tf.errors.InvalidArgumentError) as err:
        sess.run(out, {x: np.arange(6, dtype=np.float32)})
    assert err.value.op is not None and err.value.op.name == "squashed"
    assert dev.memory.used == before


def test_a_folded_constant_that_does_not_fit_its_device_fails_naming_it():
    """The fast program stores its folded constants first, counting their bytes: a device
    out of memory there fails the step naming the constant (mapped from its line)."""
    with tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        three = tf.constant(np.ones(3, np.float32), name="three")
        out = tf.multiply(x, three, name="scaled")
    sess = tf.Session()
    plan = sess._plan([out], [], {x: None})
    assert [n.name for n, *_ in plan.fast.constants] == ["three"]
    memory = _gpu0(sess).memory
    used = memory.used
    memory.used = memory.limit
    try:
        with pytest.raises(tf.errors.ResourceExhaustedError, match=r"Node: three\]") as err:
            sess.run(out, {x: np.ones((2, 3), np.float32)})
    finally:
        memory.used = used
    assert plan.fast.node_at(err.value).name == "three"
    np.testing.assert_array_equal(sess.run(out, {x: np.ones((2, 3), np.float32)}),
                                  np.ones((2, 3), np.float32))
