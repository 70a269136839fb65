"""GraphDefs with TF 2.x's op types cross between TensorFlow and tfteach: ``AddV2`` (what
``a + b`` makes in TF 2.x's ``compat.v1``) and while loops over TensorArrays, whose handles
TF types ``resource`` (``tf.scan``, ``tf.nn.dynamic_rnn``). Each graph runs on the other side
with the same values. A loop's gradient does not cross: TF keeps a loop's forward values on
stacks (``StackV2``), tfteach in its own ``LoopHistory`` ops, and each side names the op it
lacks. The RNN cases need ``tf_keras`` (TF 2.16+ serves its RNN cells from it)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest
from tf_oracle import tf1

import tfteach
from tfteach import errors

pytestmark = pytest.mark.conformance

_X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10.0 - 1.0


def _cells(lib):
    if lib is tfteach:
        return tfteach.nn.rnn_cell
    pytest.importorskip("tf_keras", reason="tf.compat.v1.nn.rnn_cell needs tf_keras on TF 2.16+")
    return importlib.import_module("tf_keras.api._v1.keras.__internal__.legacy.rnn_cell")


def _scan(lib):
    x = lib.constant(_X[0])
    return [lib.scan(lambda acc, row: acc * 0.5 + row, x),
            lib.map_fn(lambda row: lib.reduce_sum(row * row), x)]


def _dynamic_rnn(lib):
    with lib.variable_scope("rnn", initializer=lib.constant_initializer(0.25)):
        outputs, state = lib.nn.dynamic_rnn(_cells(lib).GRUCell(3), lib.constant(_X),
                                            sequence_length=[3, 2], dtype=lib.float32)
    return [outputs, state]


def _built(lib, build):
    """``build(lib)`` in a fresh graph: its GraphDef (as TF's protobuf), the names of its
    tensors and their values."""
    with lib.Graph().as_default() as graph:
        ys = build(lib)
        with lib.Session() as session:
            session.run(lib.global_variables_initializer())
            values = session.run(ys)
    graph_def = tf1.GraphDef.FromString(graph.as_graph_def().SerializeToString())
    return graph_def, [y.name for y in ys], values


def _imported_run(lib, graph_def, names):
    """Import ``graph_def`` into a fresh graph of ``lib``, run its variables' initial
    assignments, and give the values of ``names`` and their ops' types."""
    with lib.Graph().as_default() as graph:
        ys = lib.import_graph_def(graph_def, return_elements=names, name="")
        assigns = [op for op in graph.get_operations() if op.type == "Assign"]
        with lib.Session() as session:
            session.run(assigns)
            return session.run(ys), [y.op.type for y in ys]


def _assert_close(got, expected):
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_a_plus_b_is_add_v2_in_tf_and_tfteach_runs_and_differentiates_it():
    with tf1.Graph().as_default() as graph:
        x = tf1.placeholder(tf1.float32, [None, 2], name="x")
        y = tf1.multiply(x, 3.0, name="scaled") + tf1.constant([1.0, -1.0])
        (dx,) = tf1.gradients(y * y, x)
        feed = np.array([[1.0, 2.0], [-0.5, 4.0]], np.float32)
        with tf1.Session() as session:
            expected = session.run([y, dx], {x: feed})
    assert y.op.type == "AddV2"
    with tfteach.Graph().as_default() as ours:
        (z,) = tfteach.import_graph_def(graph.as_graph_def(), return_elements=[y.name], name="")
        xz = ours.get_tensor_by_name("x:0")
        (dz,) = tfteach.gradients(z * z, xz)
        with tfteach.Session() as session:
            got = session.run([z, dz], {xz: feed})
    assert z.op.type == "AddV2"
    _assert_close(got, expected)
    back = tf1.GraphDef.FromString(ours.as_graph_def().SerializeToString())
    assert [n.op for n in back.node if n.name == y.op.name] == ["AddV2"]


@pytest.mark.parametrize("build", [_scan, _dynamic_rnn], ids=lambda b: b.__name__[1:])
def test_tf_loops_over_tensor_arrays_import_into_tfteach_and_compute_the_same(build):
    graph_def, names, expected = _built(tf1, build)
    assert "TensorArrayV3" in {n.op for n in graph_def.node}
    got, types = _imported_run(tfteach, graph_def, names)
    assert types == [graph_def.node[[n.name for n in graph_def.node].index(name[:-2])].op
                     for name in names]
    _assert_close(got, expected)


@pytest.mark.parametrize("build", [_scan, _dynamic_rnn], ids=lambda b: b.__name__[1:])
def test_tfteachs_loops_over_tensor_arrays_import_into_tf_and_compute_the_same(build):
    if build is _dynamic_rnn:
        _cells(tf1)                                   # the same skip as TF's own build
    graph_def, names, expected = _built(tfteach, build)
    got, _ = _imported_run(tf1, graph_def, names)
    _assert_close(got, expected)


def test_a_tensor_arrays_handle_is_a_resource_vector_as_in_tf():
    def handle(lib):
        with lib.Graph().as_default():
            h = lib.TensorArray(lib.float32, size=2).handle
            return h.dtype.name, h.shape.as_list()
    assert handle(tfteach) == handle(tf1) == ("resource", [2])


def _scan_gradient(lib):
    x = lib.constant(_X[0])
    return lib.gradients(lib.reduce_sum(lib.scan(lambda acc, row: acc * row, x)), x)


def test_a_tf_loops_gradient_does_not_import_and_tfteach_names_the_op_it_lacks():
    graph_def, _, _ = _built(tf1, _scan_gradient)
    with tfteach.Graph().as_default(), pytest.raises(errors.NotFoundError, match="'StackV2'"):
        tfteach.import_graph_def(graph_def, name="")


def test_tfteachs_loop_gradient_does_not_import_into_tf_which_names_the_op():
    graph_def, _, _ = _built(tfteach, _scan_gradient)
    with tf1.Graph().as_default(), pytest.raises(tf1.errors.NotFoundError,
                                                 match="'LoopHistoryPush'"):
        tf1.import_graph_def(graph_def, name="")
