"""TF's partition graphs and tfteach's are read into one IR (``framework.node_def``), so the
TensorFlow bridge and tfteach's own graphs give the views the same nodes and transfers."""
from __future__ import annotations

import pytest

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402
from tfteach.framework.node_def import GraphDef  # noqa: E402
from tfteach.notebook.tf_backend import (  # noqa: E402
    partition_graphs_of,
    step_stats_from_tf,
    transfers_from_partitions,
)

pytestmark = pytest.mark.conformance
TRACE = dict(trace_level=3, output_partition_graphs=True)


def _config(tf):
    cfg = tf.ConfigProto(device_count={"CPU": 2})
    if tf is tf1:        # no rewrites: the partitions hold every node as built
        cfg.graph_options.rewrite_options.disable_meta_optimizer = True
        cfg.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
        cfg.graph_options.optimizer_options.do_constant_folding = False
    return cfg


def _traced_two_cpu_step(tf):
    """``a`` on cpu:0 goes to ``b`` on cpu:1 and comes back to ``c``: the RunMetadata."""
    with tf.Graph().as_default() as g:
        with tf.device("/cpu:0"):
            a = tf.constant([1.0, 2.0], name="a")
        with tf.device("/cpu:1"):
            b = tf.multiply(a, 2.0, name="b")
        with tf.device("/cpu:0"):
            c = tf.multiply(b, 3.0, name="c")
        md = tf.RunMetadata()
        with tf.Session(config=_config(tf)) as sess:
            sess.run(c, options=tf.RunOptions(**TRACE), run_metadata=md)
    return md, g


def _graphs(tf) -> tuple[list[GraphDef], object, object]:
    md, g = _traced_two_cpu_step(tf)
    graphs = partition_graphs_of(md) if tf is tf1 else md.partition_graphs
    return graphs, md, g


def test_tfs_partition_graphs_read_into_the_ir_hold_tfteachs_nodes():
    ours, theirs = (_graphs(tf)[0] for tf in (tfteach, tf1))
    assert all(isinstance(g, GraphDef) for g in theirs)

    def nodes(graphs):
        return sorted((n.name, n.op, n.device, tuple(n.input)) for g in graphs for n in g.node)
    assert nodes(ours) == nodes(theirs)
    for graphs in (ours, theirs):
        recvs = [n for g in graphs for n in g.node if n.op == "_Recv"]
        assert len(recvs) == 2 and all(isinstance(n.attr["tensor_name"], str) and
                                       n.attr["client_terminated"] is False for n in recvs)


def test_one_reader_gives_the_same_transfers_for_both():
    def transfers(tf):
        graphs, md, g = _graphs(tf)
        stats = step_stats_from_tf(md, g) if tf is tf1 else md.step_stats
        return sorted((t.tensor_name, t.src_device, t.dst_device, t.dst_op)
                      for t in transfers_from_partitions(graphs, stats))
    ours, theirs = transfers(tfteach), transfers(tf1)
    assert ours == theirs
    assert [t[0] for t in ours] == ["a:0", "b:0"]


def test_tfteachs_partition_graph_bytes_parse_as_tfs_graph_def():
    graphs, _, _ = _graphs(tfteach)
    for g in graphs:
        theirs = tf1.GraphDef.FromString(g.SerializeToString())
        assert [(n.name, n.op, n.device) for n in theirs.node] == \
            [(n.name, n.op, n.device) for n in g.node]
        assert GraphDef.from_proto(theirs) == g
