"""Recurrent networks against TensorFlow: ``tf.nn.rnn_cell`` cells run by ``dynamic_rnn``
and ``static_rnn`` give TF's outputs, final states, static shapes and variable names, and
one training step from the same weights gives TF's loss. TF 2.16+ serves the cells from
``tf_keras``; those tests skip without it. ``tf.where`` with a vector condition (which
``sequence_length`` uses) is compared without it."""
import importlib

import numpy as np
import pytest
from tf_oracle import assert_built_as_tf, tf1, train_once

import tfteach as tf

pytestmark = pytest.mark.conformance

R = np.random.RandomState(0)
X = R.randn(3, 4, 5).astype(np.float32)


def _cells(lib):
    if lib is tf:
        return tf.nn.rnn_cell
    pytest.importorskip("tf_keras", reason="tf.compat.v1.nn.rnn_cell needs tf_keras on TF 2.16+")
    return importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.rnn_cell")


def _minimal_cell(lib, cells):
    """A learner's own cell, written against TF 1.x's RNNCell interface."""
    class MinimalRNNCell(cells.RNNCell):
        def __init__(self, units):
            super().__init__()
            self.units = units

        state_size = output_size = property(lambda self: self.units)

        def build(self, inputs_shape):
            self.w = self.add_variable("w", [inputs_shape[-1], self.units])
            self.u = self.add_variable("u", [self.units, self.units])
            self.built = True

        def call(self, inputs, state):
            h = lib.tanh(lib.matmul(inputs, self.w) + lib.matmul(state, self.u))
            return h, h
    return MinimalRNNCell(3)


def _dynamic(lib, x):
    cells = _cells(lib)
    o0, _ = lib.nn.dynamic_rnn(_minimal_cell(lib, cells), x, dtype=lib.float32, scope="own")
    o1, s1 = lib.nn.dynamic_rnn(cells.BasicLSTMCell(6), x, dtype=lib.float32)
    o2, s2 = lib.nn.dynamic_rnn(cells.GRUCell(4), x, sequence_length=[4, 2, 3],
                                dtype=lib.float32, scope="gru")
    o3, s3 = lib.nn.dynamic_rnn(cells.BasicLSTMCell(3, state_is_tuple=False),
                                lib.transpose(x, [1, 0, 2]), dtype=lib.float32,
                                time_major=True, scope="time_major")
    o4, _ = lib.nn.dynamic_rnn(cells.ResidualWrapper(cells.DeviceWrapper(cells.GRUCell(5),
                                                                         "/cpu:0")),
                               x, dtype=lib.float32, scope="residual")
    return [o0, o1, s1.c, s1.h, o2, s2, o3, s3, o4]


def _bidirectional(lib, x):
    cells = _cells(lib)
    (a, b), (sa, sb) = lib.nn.bidirectional_dynamic_rnn(
        cells.GRUCell(3), cells.BasicLSTMCell(2), x, sequence_length=[4, 2, 3],
        dtype=lib.float32)
    (c, d), _ = lib.nn.bidirectional_dynamic_rnn(
        cells.GRUCell(3), cells.DropoutWrapper(cells.GRUCell(2), output_keep_prob=1.0), x,
        dtype=lib.float32, scope="plain")
    return [a, b, sa, sb.c, sb.h, c, d]


def _static_bidirectional(lib, x):
    cells = _cells(lib)
    steps = lib.unstack(x, axis=1)
    outputs, s_fw, s_bw = lib.nn.static_bidirectional_rnn(
        cells.GRUCell(3), cells.BasicLSTMCell(2), steps, dtype=lib.float32,
        sequence_length=[4, 2, 3])
    plain, _, _ = lib.nn.static_bidirectional_rnn(cells.BasicRNNCell(2), cells.BasicRNNCell(2),
                                                  steps, dtype=lib.float32, scope="plain")
    return outputs + plain + [s_fw, s_bw.c, s_bw.h]


def _static(lib, x):
    cells = _cells(lib)
    stacked = cells.MultiRNNCell([cells.BasicRNNCell(3),
                                  cells.LSTMCell(5, use_peepholes=True, num_proj=2,
                                                 cell_clip=0.5)])
    outputs, state = lib.nn.static_rnn(stacked, lib.unstack(x, axis=1), dtype=lib.float32,
                                       sequence_length=[4, 1, 3])
    return outputs + [state[0], state[1].c, state[1].h]


@pytest.mark.parametrize("build", [_dynamic, _bidirectional, _static, _static_bidirectional],
                         ids=lambda b: b.__name__)
def test_outputs_states_variables_and_a_training_step_match_tf(build):
    """Op types too for dynamic_rnn; static_rnn's sequence_length copies states through
    with Select where TF builds a cond per step (same values)."""
    want_ops, want_vars, weights, want = train_once(tf1, build, X, 0.1)
    got_ops, got_vars, _, got = train_once(tf, build, X, 0.1, weights)
    assert got_vars == want_vars
    keep = (lambda d: d[2]) if build in (_static, _static_bidirectional) else \
        (lambda d: (d[0], d[2]))
    assert [keep(d) for d in got_ops] == [keep(d) for d in want_ops]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_dynamic_rnn_without_dtype_or_state_is_a_value_error_as_in_tf():
    for lib in (tf1, tf):
        with lib.Graph().as_default(), pytest.raises(ValueError, match="dtype"):
            lib.nn.dynamic_rnn(_cells(lib).GRUCell(2), lib.constant(X))


def test_where_with_a_vector_condition_picks_rows_as_in_tf():
    def build(lib):
        c = lib.constant([True, False, True])
        a, b = lib.constant(X[:, 0]), lib.constant(X[:, 1])
        return [lib.where(c, a, b)] + lib.gradients(lib.reduce_sum(lib.where(c, a * a, b)),
                                                    [a, b])
    assert_built_as_tf(build, tf, rtol=1e-6)


def test_reverse_sequence_and_its_gradient_match_tf():
    def build(lib):
        x = lib.constant(X)
        ys = [lib.reverse_sequence(x, [1, 4, 2], seq_axis=1, batch_axis=0),
              lib.reverse_sequence(x, [3, 0, 2, 1], seq_axis=0, batch_axis=1)]
        return ys + lib.gradients(lib.reduce_sum(lib.sin(ys[0]) * ys[1]), [x])
    assert_built_as_tf(build, tf, rtol=1e-6)


def test_a_sequence_longer_than_its_dimension_is_tfs_error():
    for lib in (tf1, tf):
        with lib.Graph().as_default(), lib.Session() as session:
            y = lib.reverse_sequence(lib.constant(X), [1, 5, 2], seq_axis=1, batch_axis=0)
            with pytest.raises(lib.errors.InvalidArgumentError, match=r"seq_lens\(1\) > "):
                session.run(y)


def test_colocated_gradients_of_device_wrapped_layers_sit_where_tfs_do():
    def devices(lib):
        cells = _cells(lib)
        with lib.Graph().as_default() as g:
            layers = [cells.DeviceWrapper(cells.GRUCell(4), f"/gpu:{k}") for k in (0, 1)]
            outputs, _ = lib.nn.dynamic_rnn(cells.MultiRNNCell(layers), lib.constant(X),
                                            dtype=lib.float32)
            lib.train.GradientDescentOptimizer(0.1).minimize(
                lib.reduce_sum(outputs), colocate_gradients_with_ops=True)
            return sorted((op.type, "cell_1" in op.name, op.device) for op in g.get_operations()
                          if op.type in ("MatMul", "BiasAddGrad")
                          and op.name.startswith("gradients/"))

    assert devices(tf) == devices(tf1)


def test_a_checkpoint_tf_saved_restores_into_the_same_rnn_on_tfteach(tmp_path):
    def model(lib):
        cells = _cells(lib)
        x = lib.constant(X)
        stacked = cells.MultiRNNCell([cells.LSTMCell(4, use_peepholes=True), cells.GRUCell(3)])
        outputs, _ = lib.nn.dynamic_rnn(stacked, x, dtype=lib.float32)
        return outputs

    with tf1.Graph().as_default():
        outputs = model(tf1)
        with tf1.Session() as session:
            session.run(tf1.global_variables_initializer())
            want = session.run(outputs)
            prefix = tf1.train.Saver().save(session, str(tmp_path / "rnn"))
    with tf.Graph().as_default():
        outputs = model(tf)
        with tf.Session() as session:
            tf.train.Saver().restore(session, prefix)
            got = session.run(outputs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
