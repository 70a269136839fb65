"""The op types added for TF 1.x programs' array, math, check and print functions travel as
TF's GraphDef: a graph tfteach built runs in TensorFlow, and one TensorFlow built runs in
tfteach, with the same values (Multinomial's draws: the same shape)."""
import numpy as np
import pytest
from tf_oracle import tf1

import tfteach

pytestmark = pytest.mark.conformance


def _build(lib):
    x = lib.constant(np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3), name="x")
    outs = [lib.einsum("ij,kj->ik", x, x), lib.boolean_mask(x, [True, False]), lib.eye(3),
            lib.eye(2, 3), lib.linalg.diag_part(x), *lib.setdiff1d([1, 2, 3], [2]),
            lib.bincount([1, 1, 3]), lib.segment_sum(x, [0, 0]), lib.check_numerics(x, "m"),
            lib.Print(x, [x], "x: "), lib.shape(x, out_type=lib.int64), lib.where(x > 2.0),
            lib.multinomial(lib.zeros([2, 3]), 4, seed=1)]
    return [t.name for t in outs], lib.print("printed", x).name


def _values(lib, graph, names, printer):
    with graph.as_default(), lib.Session() as session:
        session.run(printer)
        return session.run(names)


@pytest.mark.parametrize("direction", ["tfteach-to-tf", "tf-to-tfteach"])
def test_the_new_ops_cross_as_graph_defs(direction):
    source, target = (tfteach, tf1) if direction == "tfteach-to-tf" else (tf1, tfteach)
    built = source.Graph()
    with built.as_default():
        names, printer = _build(source)
    graph_def = tf1.GraphDef.FromString(built.as_graph_def().SerializeToString())
    imported = target.Graph()
    with imported.as_default():
        target.import_graph_def(graph_def, name="")
    want = _values(source, built, names, printer)
    got = _values(target, imported, names, printer)
    for name, g, w in zip(names, got, want, strict=True):
        assert np.shape(g) == np.shape(w), name
        if not name.startswith("multinomial"):
            np.testing.assert_allclose(g, w, err_msg=name)
