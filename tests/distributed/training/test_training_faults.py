"""Faults on a real multi-process LocalCluster: a worker is killed mid-run (async goes on;
sync goes on with a backup worker) and the ps is restarted (training resumes from the last
checkpoint, losing at most the steps since it)."""
import pytest

from tfteach import experiments
from tfteach.distributed.local.local_cluster import LocalCluster
from tfteach.examples import distributed_digits as program

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster():
    with LocalCluster(ps=1, workers=3, engine=program.GRAPH_ENGINE) as c:
        yield c


def _after(records, worker, t):
    return [r for r in records if r["worker"] == worker and r["wall_time"] > t]


@pytest.mark.parametrize("mode,backup,steps", [("async", 0, 1000), ("sync", 1, 200)])
def test_training_goes_on_when_a_worker_is_killed(cluster, mode, backup, steps):
    # worker 2's client is a process that takes a second to start: enough steps that
    # workers 0 and 1 are still training when it has joined and is killed (async steps
    # are fast: on a loaded machine two workers once did 200 before worker 2 had joined)
    result = experiments.sync_vs_async(workers=3, backup_workers=backup, steps=steps,
                                       modes=(mode,), kill_worker=(2, 15), cluster=cluster)
    killed, records = result["killed"][mode], result[mode]
    assert killed is not None and killed["worker"] == 2
    assert result["errors"][mode] == []
    assert result["global_step"][mode] >= steps              # the run reached its end
    assert [r for r in records if r["worker"] == 2]          # worker 2 took part ...
    assert not _after(records, 2, killed["wall_time"] + 0.5)  # ... and then stopped
    assert _after(records, 0, killed["wall_time"]) and _after(records, 1, killed["wall_time"])
    assert not cluster.alive("worker", 2)


@pytest.mark.parametrize("sync", [False, True])
def test_training_resumes_from_the_last_checkpoint_after_a_ps_restart(cluster, tmp_path, sync):
    """Sync too: the new ps has no token queue or accumulators; the chief makes them again."""
    import tfteach as tf
    tf.Session.reset(cluster.target("worker", 0))
    model = program.build_model(cluster.spec, 0, sync=sync)
    restarted_at = []

    def on_step(record):
        if record["global_step"] >= 22 and not restarted_at:
            restarted_at.append(record["global_step"])
            cluster.restart("ps", 0)                 # all its variables are gone

    records = program.train_worker(cluster.target("worker", 0), model, steps=40,
                                   checkpoint_dir=str(tmp_path), save_checkpoint_steps=5,
                                   on_step=on_step)
    steps = [r["global_step"] for r in records]
    resumed = steps[steps.index(restarted_at[0]) + 1]
    last_checkpoint = restarted_at[0] // 5 * 5
    # restored, then one more step (sync records the token: the step the next step starts at)
    assert resumed == last_checkpoint + (0 if sync else 1)
    assert restarted_at[0] - last_checkpoint < 5            # lost less than one interval
    assert steps[-1] == 40
    assert program.evaluate(cluster.target("worker", 0), model) > 0.8


def _sync_step_without_worker_1(tf, server_class):
    """1 ps + 2 workers in this process; worker 0 (the chief) runs sync training with
    replicas_to_aggregate=2 and no initial tokens while worker 1 never steps: its step waits
    for worker 1's gradient. Returns the error of that step, run with a 3 s timeout."""
    from tfteach.distributed.transport.processes import free_ports

    ports = free_ports(3)
    cluster = tf.train.ClusterSpec({"ps": [f"localhost:{ports[0]}"],
                                    "worker": [f"localhost:{p}" for p in ports[1:]]})
    servers = [server_class(cluster, job_name=job, task_index=task)
               for job, task in [("ps", 0), ("worker", 0), ("worker", 1)]]
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                      cluster=cluster)):
            step = tf.train.get_or_create_global_step()
            weight = tf.Variable(1.0, name="w")
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                                 replicas_to_aggregate=2, total_num_replicas=2)
            train = opt.minimize(tf.square(weight), global_step=step)
        hook = opt.make_session_run_hook(is_chief=True, num_tokens=0)
        with tf.train.MonitoredTrainingSession(servers[1].target, is_chief=True,
                                               hooks=[hook], stop_grace_period_secs=1) as sess:
            with pytest.raises(tf.errors.DeadlineExceededError) as info:
                sess.run(train, options=tf.RunOptions(timeout_in_ms=3000))
    return info.value, servers


def test_a_sync_step_that_times_out_names_the_worker_whose_gradient_is_missing():
    import tfteach as tf

    error, servers = _sync_step_without_worker_1(tf, tf.train.Server)
    for server in servers:
        server.stop()
    assert "sync_token_q" in error.message                  # the message comes first
    assert "no gradient came from /job:worker/replica:0/task:1" in error.hint
    assert "task:0" not in error.hint.split("no gradient came from")[1].split(".")[0]


@pytest.mark.conformance
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_sync_step_without_the_other_worker_times_out_as_in_tf():
    """TF's chief queue runner thread dies with CancelledError when the session closes."""
    tf1 = pytest.importorskip("tensorflow.compat.v1")
    tf1.disable_v2_behavior()
    _sync_step_without_worker_1(tf1, tf1.train.Server)      # TF cannot stop its servers
