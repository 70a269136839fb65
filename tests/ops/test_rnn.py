"""Recurrent cells and loops without TensorFlow: ``dynamic_rnn`` and ``static_rnn`` compute
the cells' textbook formulas (checked against NumPy with the variables' own values), name
variables as TF does, and honour ``sequence_length`` (zeros past the end, the state held)."""
import numpy as np

import tfteach as tf

R = np.random.RandomState(5)
X = R.randn(2, 3, 4).astype(np.float32)
LENGTHS = [3, 1]


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _lstm_reference(x, kernel, bias, units, forget_bias=1.0):
    c = h = np.zeros((x.shape[0], units), np.float32)
    outputs = []
    for t in range(x.shape[1]):
        i, j, f, o = np.split(np.concatenate([x[:, t], h], 1) @ kernel + bias, 4, axis=1)
        c = c * _sigmoid(f + forget_bias) + _sigmoid(i) * np.tanh(j)
        h = np.tanh(c) * _sigmoid(o)
        outputs.append(h)
    return np.stack(outputs, 1), c, h


def _gru_reference(x, gk, gb, ck, cb, lengths):
    h = np.zeros((x.shape[0], cb.shape[0]), np.float32)
    outputs = []
    for t in range(x.shape[1]):
        r, u = np.split(_sigmoid(np.concatenate([x[:, t], h], 1) @ gk + gb), 2, axis=1)
        cand = np.tanh(np.concatenate([x[:, t], r * h], 1) @ ck + cb)
        new = u * h + (1 - u) * cand
        live = (t < np.asarray(lengths))[:, None]
        outputs.append(np.where(live, new, 0.0))
        h = np.where(live, new, h)
    return np.stack(outputs, 1), h


def test_dynamic_rnn_computes_the_basic_lstm_formula_with_tfs_variable_names():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 3, 4])
        outputs, state = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(5), x,
                                           dtype=tf.float32)
        names = [v.op.name for v in tf.trainable_variables()]
        assert names == ["rnn/basic_lstm_cell/kernel", "rnn/basic_lstm_cell/bias"]
        assert outputs.shape.as_list() == [None, 3, 5]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            kernel, bias = sess.run(tf.trainable_variables())
            got = sess.run([outputs, state.c, state.h], {x: X})
    for g, w in zip(got, _lstm_reference(X, kernel, bias, 5), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_sequence_length_zeroes_outputs_and_holds_the_state_in_both_loops():
    with tf.Graph().as_default():
        x = tf.constant(X)
        cell = tf.nn.rnn_cell.GRUCell(3)
        d_out, d_state = tf.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS,
                                           dtype=tf.float32)
        s_out, s_state = tf.nn.static_rnn(cell, tf.unstack(x, axis=1),
                                          sequence_length=LENGTHS, dtype=tf.float32)
        names = [v.op.name for v in tf.trainable_variables()]
        assert names == ["rnn/gru_cell/gates/kernel", "rnn/gru_cell/gates/bias",
                         "rnn/gru_cell/candidate/kernel", "rnn/gru_cell/candidate/bias"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            weights = sess.run(tf.trainable_variables())
            d_out, d_state, s_out, s_state = sess.run([d_out, d_state, tf.stack(s_out, 1),
                                                       s_state])
    want_out, want_state = _gru_reference(X, *weights, LENGTHS)
    for got in (d_out, s_out):
        np.testing.assert_allclose(got, want_out, rtol=1e-5, atol=1e-6)
    for got in (d_state, s_state):
        np.testing.assert_allclose(got, want_state, rtol=1e-5, atol=1e-6)


def test_a_training_step_through_dynamic_rnn_lowers_the_loss():
    with tf.Graph().as_default():
        x = tf.constant(X)
        cells = [tf.nn.rnn_cell.LSTMCell(4, use_peepholes=True), tf.nn.rnn_cell.BasicRNNCell(2)]
        outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(cells), x, dtype=tf.float32)
        loss = tf.reduce_mean(tf.square(outputs - 0.5))
        step = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(loss)
            for _ in range(3):
                sess.run(step)
            assert sess.run(loss) < before


def test_dropout_wrapper_drops_outputs_and_the_lstm_h_but_keeps_the_variables():
    with tf.Graph().as_default():
        x = tf.constant(X)
        cell = tf.nn.rnn_cell.BasicLSTMCell(50)
        plain, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
        wrapped = tf.nn.rnn_cell.DropoutWrapper(cell, output_keep_prob=0.5, seed=3)
        dropped, state = tf.nn.dynamic_rnn(wrapped, x, dtype=tf.float32)
        assert [v.op.name for v in tf.trainable_variables()] == \
            ["rnn/basic_lstm_cell/kernel", "rnn/basic_lstm_cell/bias"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            plain, dropped = sess.run([plain, dropped])
    kept = dropped != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(dropped[kept], 2 * plain[kept], rtol=1e-5)


def test_a_learners_own_cell_builds_once_in_its_snake_case_scope():
    class MinimalRNNCell(tf.nn.rnn_cell.RNNCell):
        state_size = output_size = property(lambda self: 3)

        def build(self, inputs_shape):
            self.w = self.add_variable("w", [inputs_shape[-1], 3])

        def call(self, inputs, state):
            h = tf.tanh(tf.matmul(inputs, self.w) + state)
            return h, h

    with tf.Graph().as_default():
        outputs, state = tf.nn.dynamic_rnn(MinimalRNNCell(), tf.constant(X), dtype=tf.float32)
        assert [v.op.name for v in tf.trainable_variables()] == ["rnn/minimal_rnn_cell/w"]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w, outputs, state = sess.run([tf.trainable_variables()[0], outputs, state])
    h = np.zeros((2, 3), np.float32)
    for t in range(3):
        h = np.tanh(X[:, t] @ w + h)
        np.testing.assert_allclose(outputs[:, t], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state, h, rtol=1e-5, atol=1e-6)


def test_device_wrappers_put_each_layer_of_a_stack_on_its_gpu():
    with tf.Graph().as_default():
        x = tf.constant(X)
        layers = [tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.GRUCell(4), f"/gpu:{k}")
                  for k in (0, 1)]
        outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(layers), x, dtype=tf.float32)
        ops = tf.get_default_graph().get_operations()
        matmuls = {op.name: op.device for op in ops if op.type == "MatMul"}
        kernels = {v.op.name: v.op.device for v in tf.trainable_variables() if "kernel" in v.name}
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            assert sess.run(outputs).shape == (2, 3, 4)
    assert matmuls and all(d == f"/device:GPU:{1 if 'cell_1' in n else 0}"
                           for n, d in matmuls.items())
    assert all(d == f"/device:GPU:{1 if 'cell_1' in n else 0}" for n, d in kernels.items())


def test_colocated_gradients_in_the_backward_loop_follow_each_layer_to_its_gpu():
    with tf.Graph().as_default() as g:
        layers = [tf.nn.rnn_cell.DeviceWrapper(tf.nn.rnn_cell.GRUCell(4), f"/gpu:{k}")
                  for k in (0, 1)]
        outputs, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.MultiRNNCell(layers), tf.constant(X),
                                       dtype=tf.float32)
        tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(outputs),
                                                        colocate_gradients_with_ops=True)
        grads = [op for op in g.get_operations()
                 if op.type == "MatMul" and op.name.startswith("gradients/")]
    assert len(grads) == 8
    assert all(op.device == f"/device:GPU:{1 if 'cell_1' in op.name else 0}" for op in grads)


def test_tf_contrib_rnn_names_the_same_cells_and_says_what_it_lacks():
    assert tf.contrib.rnn.BasicLSTMCell is tf.nn.rnn_cell.BasicLSTMCell
    assert tf.contrib.rnn.static_rnn is tf.nn.static_rnn
    for owner, path in ((tf.contrib, "contrib.layers"),
                        (tf.contrib.rnn, "contrib.rnn.LayerNormBasicLSTMCell")):
        try:
            getattr(owner, path.rsplit(".", 1)[1])
        except AttributeError as e:
            assert f"tfteach has no tf.{path}" in str(e)
        else:
            raise AssertionError(f"tf.{path} should not exist")


def test_static_and_dynamic_bidirectional_rnns_agree_with_sequence_lengths():
    with tf.Graph().as_default():
        x = tf.constant(X)
        fw, bw = tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.BasicRNNCell(2)
        static, s_fw, s_bw = tf.nn.static_bidirectional_rnn(
            fw, bw, tf.unstack(x, axis=1), sequence_length=LENGTHS, dtype=tf.float32)
        (d_fw, d_bw), (ds_fw, ds_bw) = tf.nn.bidirectional_dynamic_rnn(
            fw, bw, x, sequence_length=LENGTHS, dtype=tf.float32)
        assert len(tf.trainable_variables()) == 6 and static[0].shape.as_list() == [2, 5]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            static, d_fw, d_bw, states = sess.run([tf.stack(static, 1), d_fw, d_bw,
                                                   [s_fw, s_bw, ds_fw, ds_bw]])
    np.testing.assert_allclose(static, np.concatenate([d_fw, d_bw], 2), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[0], states[2], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(states[1], states[3], rtol=1e-5, atol=1e-6)
