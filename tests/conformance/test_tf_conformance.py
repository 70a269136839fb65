"""Conformance: the same programs on tfteach and on TensorFlow's compat.v1, compared.

Runs only where TensorFlow is installed (``pip install -e ".[conformance]"``); otherwise the
whole module skips. TensorFlow runs CPU-only with ``device_count={'CPU': 3}``; tfteach runs
with no virtual GPUs (strict TF behaviour). Each program is written once against a ``tf``
module argument and returns what to fetch; we compare the fetched values, the device of
every node both runtimes executed (from FULL_TRACE step stats), and error classes.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

CPUS = {"CPU": 3}


@pytest.fixture(autouse=True)
def strict_devices(monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    tf1.reset_default_graph()
    tfteach.reset_default_graph()


def run_both(program, soft: bool = False, init: bool = False):
    """Run ``program(tf)`` on both runtimes: returns [(values, {node: device}), ...]."""
    out = []
    for mod in (tfteach, tf1):
        fetch = program(mod)
        cfg = mod.ConfigProto(device_count=CPUS, allow_soft_placement=soft)
        if mod is tf1:
            _no_graph_rewrites(cfg)
        sess = mod.Session(config=cfg)
        if init:
            sess.run(mod.global_variables_initializer())
        md = mod.RunMetadata()
        vals = sess.run(fetch, options=mod.RunOptions(trace_level=mod.RunOptions.FULL_TRACE),
                        run_metadata=md)
        placed = {n.node_name: d.device for d in md.step_stats.dev_stats for n in d.node_stats}
        out.append((vals, placed))
        sess.close()
    return out


def _no_graph_rewrites(cfg) -> None:
    """Turn off TF's constant folding and other rewrites, so step stats show every node."""
    cfg.graph_options.rewrite_options.disable_meta_optimizer = True
    cfg.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
    cfg.graph_options.optimizer_options.do_constant_folding = False


def assert_same(results, nodes):
    (ours, our_place), (theirs, their_place) = results
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64),
                               np.asarray(theirs, dtype=np.float64), rtol=1e-5)
    for n in nodes:
        assert our_place.get(n) == their_place.get(n), (n, our_place.get(n), their_place.get(n))


def seed_matmul(tf):
    with tf.device("/cpu:1"):
        a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name="a")
        b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name="b")
        return tf.matmul(a, b, name="MatMul")


def seed_towers(tf):
    c = []
    for i, d in enumerate(["/cpu:1", "/cpu:2"]):
        with tf.device(d):
            a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name=f"a{i}")
            b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name=f"b{i}")
            c.append(tf.matmul(a, b, name=f"mm{i}"))
    with tf.device("/cpu:0"):
        return tf.add_n(c, name="sum")


def variables_on_cpu0(tf):
    with tf.device("/cpu:0"):
        w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
    with tf.device("/cpu:1"):
        return tf.matmul(w, w, name="y")


def device_function(tf):
    def var_on_cpu(op):
        return "/cpu:0" if op.type in ("VariableV2", "Variable") else "/cpu:2"
    with tf.device(var_on_cpu):
        w = tf.Variable(2.0, name="w")
        return tf.multiply(w, 3.0, name="y")


def generator_two_consumers(tf):
    a = tf.constant(2.0, name="a")
    with tf.device("/cpu:2"):
        x = tf.add(a, 1.0, name="x")
    with tf.device("/cpu:0"):
        y = tf.add(a, 2.0, name="y")
    return [x, y]


def generator_one_consumer(tf):
    a = tf.constant(2.0, name="a")
    with tf.device("/cpu:1"):
        return tf.add(a, 1.0, name="x")


def ref_source_wins(tf):
    with tf.device("/cpu:1"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/cpu:2"):
        return tf.assign(v, 5.0, name="up")


def arithmetic(tf):
    x = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4), name="x")
    y = tf.reduce_sum(tf.square(x - 1.0), axis=1) / 2.0
    z = tf.cast(tf.argmax(x, 1), tf.float32) + tf.reduce_mean(x) + tf.reduce_max(x)
    t = tf.transpose(tf.reshape(x, [2, 6]))
    s = tf.concat(tf.split(t, 2, axis=1)[::-1], axis=1)
    return [y, z, tf.sqrt(tf.exp(tf.log(x + 1.0))), s, tf.add_n([x, x, x])]


@pytest.mark.parametrize("program, nodes, init", [
    (seed_matmul, ["a", "b", "MatMul"], False),
    (seed_towers, ["a0", "b0", "mm0", "a1", "b1", "mm1", "sum"], False),
    (variables_on_cpu0, ["w", "w/read", "y"], True),
    (device_function, ["w", "w/read", "y"], True),
    # TF 2.x replicates a constant with consumers on several devices (a/replicate/_N), so
    # only the consumers compare here; test_placer checks where tfteach puts "a" (E6).
    (generator_two_consumers, ["x", "y"], False),
    (generator_one_consumer, ["a", "x"], False),
    (ref_source_wins, ["v", "up"], True),
])
def test_values_and_placements_match_tensorflow(program, nodes, init):
    assert_same(run_both(program, init=init), nodes)


def test_arithmetic_values_match_tensorflow():
    (ours, _), (theirs, _) = run_both(arithmetic)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_soft_placement_of_a_missing_gpu_matches():
    def prog(tf):
        with tf.device("/device:GPU:2"):
            return tf.add(tf.constant(1.0, name="a"), 2.0, name="c")
    assert_same(run_both(prog, soft=True), ["c"])


def missing_gpu(tf):
    with tf.device("/gpu:2"):
        return tf.multiply(tf.constant(1.0), 2.0)


@pytest.mark.parametrize("program, error", [
    (missing_gpu, "InvalidArgumentError"),
    (lambda tf: tf.Variable(1.0, name="u") * 2.0, "FailedPreconditionError"),
    (lambda tf: tf.placeholder(tf.float32, [None, 3]) * 2.0, "InvalidArgumentError"),
])
def test_error_classes_match_tensorflow(program, error):
    names = []
    for mod in (tfteach, tf1):
        g = mod.Graph()
        with g.as_default():
            fetch = program(mod)
            cfg = mod.ConfigProto(device_count=CPUS)
            if mod is tf1:
                _no_graph_rewrites(cfg)
            with pytest.raises(Exception) as e:
                mod.Session(config=cfg).run(fetch)
        names.append(type(e.value).__name__)
    assert names == [error, error]


def test_unique_names_match_tensorflow():
    names = []
    for mod in (tfteach, tf1):
        g = mod.Graph()
        with g.as_default():
            ops = [mod.constant(1.0, name=n).op.name for n in ("x", "x", "x_1", "x")]
            with mod.name_scope("tower_0"):
                a = mod.constant(1.0, name="a")
            with mod.name_scope("tower_0"):
                b = mod.constant(1.0, name="a")
        names.append(ops + [a.op.name, b.op.name])
    assert names[0] == names[1]


@pytest.mark.parametrize("outer, inner", [
    ("/cpu:1", "/job:worker"), ("/cpu:1", "/device:CPU:2"), ("/cpu:1", None),
    ("/job:ps", "/task:3"), ("/job:ps/task:1", "/cpu:0"),
])
def test_device_scope_nesting_matches_tensorflow(outer, inner):
    devices = []
    for mod in (tfteach, tf1):
        g = mod.Graph()
        with g.as_default(), mod.device(outer), mod.device(inner):
            devices.append(mod.constant(1.0).op.device)
    assert devices[0] == devices[1]


def get_variable_initializer(tf):
    with tf.device("/cpu:1"):
        w = tf.get_variable("w", [2, 2], initializer=tf.constant_initializer(3.0))
    return w.initial_value


def test_get_variable_initializer_is_colocated_with_its_variable_as_in_tensorflow():
    """The initializer is built before the variable; TF still places it with the variable."""
    results = run_both(get_variable_initializer)
    (ours, our_place), (theirs, their_place) = results
    np.testing.assert_array_equal(ours, theirs)
    name = tfteach.get_default_graph().get_collection("variables")[0].initial_value.op.name
    assert our_place[name] == their_place[name] == \
        "/job:localhost/replica:0/task:0/device:CPU:1"
