"""``tf.train.ExponentialMovingAverage`` under ``replica_device_setter``: each shadow
variable, its initializer and its update are colocated with its variable, so they land on
that variable's ps task (in the graph and when a cluster runs the step), and the averages
follow the training steps."""
import numpy as np
import pytest

import tfteach as tf
from tfteach.experiments import InProcessCluster

SPEC = {"ps": ["localhost:1", "localhost:2"], "worker": ["localhost:3"]}


def _model(setter):
    with tf.device(setter):
        w = tf.Variable([1.0, -2.0], name="w")
        b = tf.Variable(0.5, name="b")
        loss = tf.reduce_sum(w * w) + 3.0 * b
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        ema = tf.train.ExponentialMovingAverage(0.5)
        with tf.control_dependencies([train]):
            step = ema.apply([w, b])
    return w, b, ema, step


def test_shadows_are_colocated_with_their_variables_on_the_ps_tasks():
    setter = tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(SPEC))
    w, b, ema, step = _model(setter)
    assert (w.device, b.device) == ("/job:ps/task:0", "/job:ps/task:1")
    graph = tf.get_default_graph()
    for var in (w, b):
        shadow = ema.average(var)
        assert shadow.name == var.op.name + "/ExponentialMovingAverage:0"
        assert shadow.device == var.device
        assert shadow.op.colocation_groups() == [b"loc:@" + var.op.name.encode()]
        update = graph.get_operation_by_name(
            "ExponentialMovingAverage/AssignMovingAvg" + ("" if var is w else "_1"))
        assert update.type == "AssignSub" and update.device == var.device
    assert step.type == "NoOp" and step.device == "/job:worker"
    assert shadow not in tf.trainable_variables() and shadow in tf.global_variables()


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_a_cluster_runs_the_averages_on_the_ps_tasks():
    with InProcessCluster(ps=2, workers=1) as cluster:
        setter = tf.train.replica_device_setter(cluster=cluster.spec,
                                                worker_device="/job:worker/task:0")
        w, b, ema, step = _model(setter)
        md = tf.RunMetadata()
        with tf.Session(cluster.target("worker", 0)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(step, run_metadata=md)
            averages = sess.run([ema.average(w), ema.average(b)])
    np.testing.assert_allclose(averages[0], 0.5 * np.array([1.0, -2.0]) + 0.5 * np.array(
        [0.8, -1.6]), rtol=1e-6)
    np.testing.assert_allclose(averages[1], 0.5 * 0.5 + 0.5 * (0.5 - 0.3), rtol=1e-6)
    task = {n: md.placement[n].split("/device:")[0]
            for n in ("ExponentialMovingAverage/AssignMovingAvg",
                      "ExponentialMovingAverage/AssignMovingAvg_1")}
    assert task == {"ExponentialMovingAverage/AssignMovingAvg": "/job:ps/replica:0/task:0",
                    "ExponentialMovingAverage/AssignMovingAvg_1": "/job:ps/replica:0/task:1"}


def test_variables_to_restore_maps_average_names_to_variables():
    w, b, ema, _ = _model(None)
    extra = tf.Variable(1.0, name="extra", trainable=False)
    restore = ema.variables_to_restore()
    assert restore == {"w/ExponentialMovingAverage": w, "b/ExponentialMovingAverage": b,
                       "extra": extra}


def test_integer_variables_are_refused():
    with pytest.raises(TypeError, match="must be half, float, or double: count:0") as info:
        tf.train.ExponentialMovingAverage(0.9).apply([tf.Variable(1, name="count")])
    assert "\nHint: " in str(info.value)


def test_learners_mistakes_with_losses_schedules_and_summaries_get_hints():
    mistakes = [lambda: tf.losses.mean_squared_error([1.0, 2.0], [1.0, 2.0, 3.0]),
                lambda: tf.losses.absolute_difference([1.0], [1.0], reduction="average"),
                lambda: tf.train.piecewise_constant(tf.constant(3), [1, 2], [0.1, 0.2]),
                lambda: tf.summary.text("note", tf.constant(1.0))]
    for mistake in mistakes:
        with pytest.raises(ValueError) as info:
            mistake()
        assert str(info.value).count("\nHint: ") == 1
