"""The build exercises whose checks run on a cluster (10.3, 11.1, 11.2): correct only when the
learner's build really ran there, on a real LocalCluster (task processes on loopback) and real
in-process servers."""
from __future__ import annotations

import secrets

import pytest
from exercise_ladder import fresh_tries  # noqa: F401

import tfteach as tf
from tfteach.distributed.transport.processes import free_ports
from tfteach.lessons import check

pytestmark = pytest.mark.cluster


def sync_worker_of(cluster, minimize_on_inner: bool = False, replicas: int = 2):
    """Lesson 10's sync worker; ``minimize_on_inner`` is the mistake of minimizing with the
    wrapped optimizer, which never trains."""
    def sync_worker(task_index, num_workers=2):
        graph = tf.Graph()
        setter = tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task_index}", cluster=cluster.spec)
        with graph.as_default(), tf.device(setter):
            x = tf.placeholder(tf.float32, [None, 64], name="x")
            y = tf.placeholder(tf.int64, [None], name="y")
            w = tf.Variable(tf.zeros([64, 10]), name="weights")
            b = tf.Variable(tf.zeros([10]), name="biases")
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=y, logits=tf.matmul(x, w) + b))
            global_step = tf.train.get_or_create_global_step()
            inner = tf.train.GradientDescentOptimizer(1.0)
            opt = tf.train.SyncReplicasOptimizer(inner, replicas_to_aggregate=replicas,
                                                 total_num_replicas=num_workers)
            train_op = (inner if minimize_on_inner else opt).minimize(loss,
                                                                     global_step=global_step)
        return graph, train_op, opt, opt.make_session_run_hook(is_chief=task_index == 0)
    return sync_worker


def test_10_3_is_correct_when_both_workers_trained_in_sync(cluster):
    assert check(sync_worker_of(cluster), exercise="10.3", cluster=cluster)


def test_10_3_refuses_a_sync_optimizer_whose_training_crashed(cluster):
    feedback = check(sync_worker_of(cluster, minimize_on_inner=True), exercise="10.3",
                     cluster=cluster)
    assert not feedback
    assert [p for p in feedback.problems if "training failed with ValueError" in p]


def test_10_3_refuses_a_backup_worker_where_none_is_asked_for(cluster):
    assert not check(sync_worker_of(cluster, replicas=1), exercise="10.3", cluster=cluster)


def test_11_1_runs_a_step_with_the_learners_config_while_worker_0_is_dead(cluster):
    filtered = tf.ConfigProto(operation_timeout_in_ms=2000,
                              device_filters=["/job:ps", "/job:worker/task:1"])
    assert check(filtered, exercise="11.1", cluster=cluster)
    assert not cluster.alive("worker", 0)
    unfiltered = tf.ConfigProto(operation_timeout_in_ms=2000)
    feedback = check(unfiltered, exercise="11.1", cluster=cluster)
    assert not feedback and "the step failed with" in feedback.problems[0]


def test_11_2_runs_a_step_through_the_learners_server(monkeypatch):
    token = secrets.token_hex(8)
    monkeypatch.setenv("TFTEACH_CLUSTER_TOKEN", token)       # what the sessions send
    ports = free_ports(2)
    two = tf.train.ClusterSpec({"worker": [f"localhost:{p}" for p in ports]})
    first = tf.train.Server(two, job_name="worker", task_index=0, token=token)
    second = tf.train.Server(two, job_name="worker", task_index=1, token="my-guess")
    try:
        feedback = check(first, exercise="11.2")
        assert not feedback and "the step failed with" in feedback.problems[0]
        second.stop()
        second = tf.train.Server(two, job_name="worker", task_index=1, token=token)
        assert check(first, exercise="11.2")
    finally:
        first.stop()
        second.stop()
