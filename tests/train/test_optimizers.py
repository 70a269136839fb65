"""Optimizers against hand-written NumPy updates, their slots (names, colocation), the
global step, exponential_decay and the errors of compute/apply_gradients."""
import numpy as np
import pytest

import tfteach as tf

W0 = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
X = np.array([[1.0, 2.0], [-1.0, 0.5], [0.3, -0.7]], np.float32)


def _loss(w):
    """loss = 0.5 * sum((X w)^2); its gradient is X^T X w."""
    return 0.5 * tf.reduce_sum(tf.square(tf.matmul(tf.constant(X), w)))


def _grad(w):
    return X.T @ (X @ w)


def _train(opt, steps=3):
    w = tf.Variable(W0, name="w")
    train = opt.minimize(_loss(w))
    values = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
            values.append(sess.run(w))
    return values


def _numpy_steps(update, state, steps=3):
    w, out = W0.astype(np.float64), []
    for t in range(1, steps + 1):
        w = update(w, _grad(w), state, t)
        out.append(w)
    return out


def _compare(got, expected):
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=2e-5, atol=1e-6)


def test_gradient_descent():
    _compare(_train(tf.train.GradientDescentOptimizer(0.1)),
             _numpy_steps(lambda w, g, s, t: w - 0.1 * g, {}))


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum(nesterov):
    def update(w, g, s, t):
        s["a"] = 0.9 * s.get("a", 0) + g
        return w - (0.05 * g + 0.05 * 0.9 * s["a"] if nesterov else 0.05 * s["a"])
    _compare(_train(tf.train.MomentumOptimizer(0.05, 0.9, use_nesterov=nesterov)),
             _numpy_steps(update, {}))


def test_adagrad():
    def update(w, g, s, t):
        s["acc"] = s.get("acc", 0.1) + g * g
        return w - 0.2 * g / np.sqrt(s["acc"])
    _compare(_train(tf.train.AdagradOptimizer(0.2)), _numpy_steps(update, {}))


def test_adam():
    b1, b2, eps, lr = 0.9, 0.999, 1e-8, 0.01

    def update(w, g, s, t):
        s["m"] = b1 * s.get("m", 0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0) + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        return w - lr_t * s["m"] / (np.sqrt(s["v"]) + eps)
    _compare(_train(tf.train.AdamOptimizer(lr)), _numpy_steps(update, {}))


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop(centered):
    lr, rho, mom, eps = 0.01, 0.9, 0.5, 1e-10

    def update(w, g, s, t):
        s["ms"] = s.get("ms", 1.0) + (g * g - s.get("ms", 1.0)) * (1 - rho)
        s["mg"] = s.get("mg", 0.0) + (g - s.get("mg", 0.0)) * (1 - rho)
        denom = s["ms"] - s["mg"] ** 2 + eps if centered else s["ms"] + eps
        s["mom"] = mom * s.get("mom", 0.0) + lr * g / np.sqrt(denom)
        return w - s["mom"]
    opt = tf.train.RMSPropOptimizer(lr, decay=rho, momentum=mom, epsilon=eps, centered=centered)
    _compare(_train(opt), _numpy_steps(update, {}))


def test_slots_are_named_like_tf_and_colocated_with_their_variable():
    with tf.device("/cpu:0"):
        w = tf.Variable(W0, name="w")
    with tf.device("/gpu:0"):
        b = tf.Variable([0.0, 0.0], name="b")
        loss = _loss(w) + tf.reduce_sum(b)
        opt = tf.train.AdamOptimizer()
        train = opt.minimize(loss)
    m, v = opt.get_slot(w, "m"), opt.get_slot(w, "v")
    assert (m.op.name, v.op.name) == ("w/Adam", "w/Adam_1")
    assert opt.get_slot(b, "m").op.name == "b/Adam"
    assert opt.get_slot_names() == ["m", "v"]
    assert m.device == w.device == "/device:CPU:0"
    assert m.op.get_attr("_class") == [b"loc:@w"]
    update = tf.get_default_graph().get_operation_by_name("Adam/update_w/ApplyAdam")
    assert update.device == "/device:CPU:0"
    beta1 = next(v for v in opt.variables() if v.op.name == "beta1_power")
    assert beta1.op.get_attr("_class") == [b"loc:@b"]          # beside the first by name
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=meta)
    assert meta.placement["w/Adam"].endswith("device:CPU:0")
    assert meta.placement["Adam/update_w/ApplyAdam"].endswith("device:CPU:0")
    assert meta.placement["Adam/update_b/ApplyAdam"].endswith("device:GPU:0")


def test_other_slot_names():
    w = tf.Variable(W0, name="w")
    mom = tf.train.MomentumOptimizer(0.1, 0.9)
    rms = tf.train.RMSPropOptimizer(0.1)
    ada = tf.train.AdagradOptimizer(0.1)
    for opt in (mom, rms, ada):
        opt.minimize(_loss(w))
    assert mom.get_slot(w, "momentum").op.name == "w/Momentum"
    assert rms.get_slot(w, "rms").op.name == "w/RMSProp"
    assert rms.get_slot(w, "momentum").op.name == "w/RMSProp_1"
    assert ada.get_slot(w, "accumulator").op.name == "w/Adagrad"
    assert all(not s.trainable for s in mom.variables() + rms.variables())
    assert tf.trainable_variables() == [w]


def test_apply_gradients_with_global_step_counts_steps():
    w = tf.Variable(W0, name="w")
    step = tf.train.get_or_create_global_step()
    assert tf.train.get_global_step() is step and step.dtype == tf.int64
    opt = tf.train.GradientDescentOptimizer(0.1)
    train = opt.apply_gradients(opt.compute_gradients(_loss(w)), global_step=step)
    assert train.type == "AssignAdd" and train.name == "GradientDescent"
    assert tf.get_collection("train_op") == [train]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            assert sess.run(train) is None
        assert tf.train.global_step(sess, step) == 3
    with pytest.raises(ValueError, match='"global_step" already exists.'):
        tf.train.create_global_step()


def test_update_op_names_follow_tf():
    w = tf.Variable(W0, name="w")
    train = tf.train.MomentumOptimizer(0.1, 0.9).minimize(_loss(w))
    names = {op.name for op in tf.get_default_graph().get_operations()}
    assert train.name == "Momentum" and train.type == "NoOp"
    assert {"Momentum/learning_rate", "Momentum/momentum",
            "Momentum/update_w/ApplyMomentum"} <= names


def test_exponential_decay():
    step = tf.Variable(0, dtype=tf.int64, trainable=False)
    smooth = tf.train.exponential_decay(0.1, step, 10, 0.5)
    stairs = tf.train.exponential_decay(0.1, step, 10, 0.5, staircase=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(step.assign(15))
        a, b = sess.run([smooth, stairs])
    assert a == pytest.approx(0.1 * 0.5 ** 1.5, rel=1e-6)
    assert b == pytest.approx(0.05, rel=1e-6)
    assert smooth.op.name == "ExponentialDecay"


def test_a_decaying_learning_rate_drives_the_optimizer():
    w = tf.Variable(W0, name="w")
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(0.1, step, 1, 0.5, staircase=True)
    train = tf.train.GradientDescentOptimizer(lr).minimize(_loss(w), global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        got = sess.run(w)
    w1 = W0 - 0.1 * _grad(W0)
    np.testing.assert_allclose(got, w1 - 0.05 * _grad(w1), rtol=1e-5)


def test_compute_gradients_with_var_list_and_gate_graph():
    w = tf.Variable(W0, name="w")
    frozen = tf.Variable(1.0, name="frozen")
    opt = tf.train.GradientDescentOptimizer(0.1)
    pairs = opt.compute_gradients(_loss(w) * frozen, var_list=[w],
                                  gate_gradients=tf.train.Optimizer.GATE_GRAPH)
    assert [v for _, v in pairs] == [w]
    assert pairs[0][0].op.name == "tuple/control_dependency"     # outside gradients/, as TF


def test_errors_say_what_is_wrong():
    w = tf.Variable(W0, name="w")
    unused = tf.Variable(1.0, name="unused")
    opt = tf.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        opt.minimize(_loss(w), var_list=[unused])
    with pytest.raises(ValueError, match="No variables provided"):
        opt.apply_gradients([])
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        opt.compute_gradients(_loss(w), gate_gradients=7)
    with pytest.raises(ValueError, match="Invalid type int32"):
        opt.compute_gradients(tf.constant(3))
    with pytest.raises(ValueError, match="initial_accumulator_value must be positive"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)
    with pytest.raises(NotImplementedError, match="Trying to optimize unsupported type"):
        opt.compute_gradients(_loss(w), var_list=[tf.constant(1.0)])
