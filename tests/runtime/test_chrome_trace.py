"""Chrome traces that Perfetto keeps: every flow event lies inside a slice of its own thread.

Perfetto binds a flow event to the slice that encloses it on the same (pid, tid) and drops a
flow whose event lies inside no slice (``flow_no_enclosing_slice``); slices of one thread that
overlap without nesting are dropped too. ``trace_problems`` checks both, for a local
multi-device step, a traced cluster step, and (as the reference) TF's own trace.
"""
from __future__ import annotations

import json

import pytest

import tfteach as tf
from tfteach.runtime.session_config import DeviceStepStats, NodeExecStats, StepStats, TransferStats

LOCAL = "/job:localhost/replica:0/task:0/device:"


def trace_problems(trace: dict) -> list[str]:
    """Flow events not strictly inside a slice of their thread, and overlapping slices of a
    thread (an event on a slice's edge may bind to no slice, or to its neighbour)."""
    slices: dict[tuple, list[tuple[int, int]]] = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            slices.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    problems = []
    for thread, spans in slices.items():
        spans.sort()
        problems += [f"slices {a} and {b} overlap on {thread}"
                     for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
    for e in trace["traceEvents"]:
        if e["ph"] in ("s", "t", "f") and not any(
                start < e["ts"] < end for start, end in slices.get((e["pid"], e["tid"]), [])):
            problems.append(f"flow {e['ph']} {e['name']} at {e['ts']} on "
                            f"({e['pid']}, {e['tid']}) lies inside no slice")
    return problems


def edge_flows(trace: dict) -> int:
    """How many flow events lie on the start or end of a slice of their thread."""
    edges = {(e["pid"], e["tid"], t) for e in trace["traceEvents"] if e["ph"] == "X"
             for t in (e["ts"], e["ts"] + e["dur"])}
    return sum((e["pid"], e["tid"], e["ts"]) in edges for e in flows(trace))


def flows(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("cat") == "DataFlow"]


def traced_step(sess, fetch) -> StepStats:
    md = tf.RunMetadata()
    sess.run(fetch, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
             run_metadata=md)
    return md.step_stats


def towers(gpus: tuple[str, str]):
    parts = []
    for d in gpus:
        with tf.device(d):
            a = tf.constant([[1.0, 2.0], [3.0, 4.0]])
            parts.append(tf.matmul(a, a))
    with tf.device("/cpu:0"):
        return tf.add_n(parts)


def test_every_flow_of_a_local_multi_device_step_lies_inside_a_slice():
    with tf.Graph().as_default():
        total = towers(("/gpu:0", "/gpu:1"))
        with tf.Session() as sess:
            stats = traced_step(sess, total)
    trace = json.loads(tf.timeline.Timeline(stats).generate_chrome_trace_format())
    assert len(flows(trace)) == 8, "producer -> transfer -> consumer, for both towers"
    assert trace_problems(trace) == []


def test_flow_starts_inside_the_producer_and_ends_inside_the_consumer():
    stats = StepStats(
        [DeviceStepStats(LOCAL + "GPU:0", [NodeExecStats("b", "Mul", 100, 10, 4, 0, "b = Mul()")]),
         DeviceStepStats(LOCAL + "CPU:0", [NodeExecStats("c", "Add", 130, 5, 4, 0,
                                                         "c = Add(b/_0)")])],
        [TransferStats("b:0", LOCAL + "GPU:0", LOCAL + "CPU:0", "b", "b/_0", 112, 8, 4)])
    trace = json.loads(tf.timeline.Timeline(stats).generate_chrome_trace_format())
    assert [(e["ph"], e["ts"]) for e in flows(trace)] == [("s", 109.5), ("t", 112.5),
                                                          ("s", 119.5), ("t", 130.5)]


def test_overlapping_ops_of_one_device_go_on_separate_lanes():
    stats = StepStats([DeviceStepStats(LOCAL + "CPU:0", [
        NodeExecStats("a", "Const", 0, 10, 4, 0, "a = Const()"),
        NodeExecStats("b", "Const", 5, 10, 4, 0, "b = Const()"),
        NodeExecStats("c", "Add", 20, 5, 4, 0, "c = Add(a, b)")])])
    trace = json.loads(tf.timeline.Timeline(stats).generate_chrome_trace_format())
    lanes = {e["args"]["name"]: e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert lanes == {"a": 0, "b": 1, "c": 0}


def test_show_memory_adds_allocator_counters():
    with tf.Graph().as_default():
        total = towers(("/gpu:0", "/gpu:1"))
        with tf.Session() as sess:
            stats = traced_step(sess, total)
    trace = json.loads(tf.timeline.Timeline(stats).generate_chrome_trace_format(
        show_memory=True))
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert {e["name"] for e in counters} == {"cpu", "GPU_0_bfc", "GPU_1_bfc"}
    assert all(e["cat"] == "Memory" and e["name"] in e["args"] for e in counters)
    last = {e["name"]: e["args"][e["name"]] for e in sorted(counters, key=lambda e: e["ts"])}
    assert last == {"cpu": 0, "GPU_0_bfc": 0, "GPU_1_bfc": 0}, "every tensor is freed"
    assert max(e["args"]["GPU_0_bfc"] for e in counters if e["name"] == "GPU_0_bfc") >= 32


@pytest.mark.cluster
def test_every_flow_of_a_traced_cluster_step_lies_inside_a_slice():
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=0, workers=2) as cluster, tf.Graph().as_default():
        total = towers(("/job:worker/task:0", "/job:worker/task:1"))
        with tf.Session(cluster.target("worker", 0)) as sess:
            stats = traced_step(sess, total)
    trace = json.loads(tf.timeline.Timeline(stats).generate_chrome_trace_format())
    assert flows(trace), "the cross-task transfer has its arrows"
    assert trace_problems(trace) == []


@pytest.mark.conformance
def test_tensorflow_trace_keeps_the_same_rule_and_event_kinds():
    pytest.importorskip("tensorflow")
    import tensorflow.compat.v1 as tf1
    from tensorflow.python.client import timeline

    tf1.disable_v2_behavior()
    config = tf1.ConfigProto(device_count={"CPU": 3})
    config.graph_options.rewrite_options.disable_meta_optimizer = True
    config.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
    config.graph_options.optimizer_options.do_constant_folding = False
    with tf1.Graph().as_default():
        parts = []
        for d in ("/cpu:1", "/cpu:2"):
            with tf1.device(d):
                a = tf1.constant([[1.0, 2.0], [3.0, 4.0]])
                parts.append(tf1.matmul(a, a))
        with tf1.device("/cpu:0"):
            total = tf1.add_n(parts)
        with tf1.Session(config=config) as sess:
            md = tf1.RunMetadata()
            sess.run(total, options=tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE),
                     run_metadata=md)
    theirs = json.loads(timeline.Timeline(md.step_stats).generate_chrome_trace_format(
        show_memory=True))
    with tf.Graph().as_default():
        ours_total = towers(("/gpu:0", "/gpu:1"))
        with tf.Session() as sess:
            stats = traced_step(sess, ours_total)
    ours = json.loads(tf.timeline.Timeline(stats).generate_chrome_trace_format(
        show_memory=True))
    assert trace_problems(ours) == []
    assert {e["ph"] for e in flows(ours)} == {e["ph"] for e in flows(theirs)} == {"s", "t"}
    assert edge_flows(theirs) == len(flows(theirs)), "TF puts them on the slices' edges"
    kinds = {(e["ph"], e.get("cat")) for e in theirs["traceEvents"] if e["ph"] in "XC"}
    assert kinds <= {(e["ph"], e.get("cat")) for e in ours["traceEvents"] if e["ph"] in "XC"}
    assert "Allocators" in {e["args"]["name"] for e in ours["traceEvents"] if e["ph"] == "M"}
