"""What %%placement does under the hood, run in this process (no kernel)."""
from __future__ import annotations

import pytest

import tfteach as tf
from tfteach.devices import discovery
from tfteach.notebook.placement_cell import (PlacementOptions, execute_cell, make_config,
                                             run_placement_cell, sink_fetches, virtual_gpus)


def test_a_cell_with_a_cond_and_a_loop_runs_and_its_timeline_shows_each_iteration():
    """The sinks skip a cond's pivots (dead half the time, unfetchable in TF) and the ops
    inside a branch; every iteration of the loop body is a slice of the timeline."""
    source = ("x = tf.constant(2.0)\n"
              "_, w = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, 1.0])\n"
              "y = tf.cond(w > 5.0, lambda: w * 2.0, lambda: w)\n")
    result = run_placement_cell(source, PlacementOptions(run=True, trace=True), {"tf": tf})
    assert result.error is None
    assert result.values == {"while/Exit:0": 3, "cond/Merge:0": 16.0}
    text = result.timeline.text()
    assert text.count("while/mul (Mul)") == 3 and text.count("cond/mul (Mul)") == 1
    assert "NextIteration" in result.view.text()
    dot = result.view.dot()
    assert '"while/Switch" [' in dot and "shape=diamond" in dot
    assert '"while/NextIteration" -> "while/Merge" [style=dashed, constraint=false];' in dot
    assert "<svg" in result.view.svg()


def test_execute_cell_returns_the_final_expression_and_keeps_names():
    ns = {}
    assert execute_cell("a = 2\nb = a * 3\nb + 1", ns) == 7
    assert ns["b"] == 6
    assert execute_cell("c = 1", ns) is None and ns["c"] == 1


def test_sink_fetches_are_the_last_ops_without_variable_initialisers():
    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(1.0, name="v")
        x = tf.add(v, tf.constant(2.0, name="two"), name="x")
        tf.square(x, name="y")
        tf.negative(x, name="z")
    names = sorted(t.name for t in sink_fetches(graph))
    assert names == ["y:0", "z:0"], names
    assert v.initializer.name not in names


def test_virtual_gpus_are_restored_after_the_cell():
    tf.config.set_virtual_gpus(3, memory_limit_mb=256)
    with virtual_gpus(1):
        assert discovery.virtual_gpu_count() == 1
    assert discovery.virtual_gpu_count() == 3
    assert discovery._settings.memory_limit_mb == 256


def test_config_flags_override_a_copy_of_the_given_config():
    given = tf.ConfigProto(log_device_placement=False)
    config = make_config(PlacementOptions(soft=True, log=True, config="given"), {"given": given})
    assert config.allow_soft_placement and config.log_device_placement
    assert not given.allow_soft_placement, "the learner's ConfigProto is not changed"


def test_config_must_be_a_config_proto():
    with pytest.raises(TypeError, match="--config must evaluate to a tf.ConfigProto"):
        make_config(PlacementOptions(config="42"), {})


def test_placement_errors_are_kept_in_the_result_with_the_stage():
    result = run_placement_cell("with tf.device('/gpu:9'):\n    x = tf.constant(1.0)",
                                PlacementOptions(), {"tf": tf})
    assert isinstance(result.error, tf.errors.InvalidArgumentError)
    assert result.stage == "placing the graph" and result.view is None
    result.close()


def test_run_errors_keep_the_placement_view():
    source = "x = tf.placeholder(tf.float32, name='x')\ny = tf.square(x, name='y')\ny"
    result = run_placement_cell(source, PlacementOptions(run=True), {"tf": tf})
    assert result.view is not None and result.stage == "running the graph"
    assert isinstance(result.error, tf.errors.InvalidArgumentError)
    assert "x" in result.error.message
    result.close()


def test_an_empty_cell_places_nothing():
    result = run_placement_cell("n = 3", PlacementOptions(run=True), {"tf": tf})
    assert result.session is None and result.view is None and result.error is None


def test_warmup_runs_the_fetches_once_before_the_traced_step():
    source = "v = tf.Variable(0.0, name='v')\nout = tf.assign_add(v, 1.0, name='out')\nout"
    cold = run_placement_cell(source, PlacementOptions(run=True), {"tf": tf})
    warm = run_placement_cell(source, PlacementOptions(run=True, warmup=True), {"tf": tf})
    assert (cold.values["out:0"], warm.values["out:0"]) == (1, 2)
    assert len(warm.run_metadata.step_stats.dev_stats) >= 1, "the timeline is the second step"
    cold.close()
    warm.close()
