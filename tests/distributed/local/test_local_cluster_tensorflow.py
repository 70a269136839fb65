"""LocalCluster(backend="tensorflow"): real tf.train.Server tasks that train the capstone's
model with real TensorFlow, and that are killed, restarted, listed and stopped as tfteach's
tasks are. Needs TensorFlow (``pip install -e ".[conformance]"``), except the test of the
error without it."""
import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tfteach import errors
from tfteach.distributed.local import task_registry as registry
from tfteach.distributed.local.local_cluster import LocalCluster
from tfteach.distributed.transport.processes import pid_alive, wait_gone

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]
needs_tf = pytest.mark.conformance
TF_IMPORT = "import tensorflow.compat.v1 as tf\ntf.disable_v2_behavior()\n"
STEPS = 40          # the global step the two workers train to


@pytest.fixture(scope="module")
def tf1():
    pytest.importorskip("tensorflow")
    import tensorflow.compat.v1 as tf

    tf.disable_v2_behavior()
    return tf


@pytest.fixture(scope="module")
def tf_cluster(tf1):
    with LocalCluster(ps=1, workers=2, backend="tensorflow") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def capstone(tf1):
    """The capstone's program (lesson 12) as a learner moves it to TensorFlow: the same
    file with its import line changed."""
    path = Path(importlib.util.find_spec("tfteach.examples.distributed_digits").origin)
    name = "distributed_digits_on_tensorflow"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, None))
    sys.modules[name] = module              # dataclasses look their module up
    source = path.read_text().replace("import tfteach as tf\n", TF_IMPORT)
    exec(compile(source, str(path), "exec"), module.__dict__)
    assert module.tf.train.Server is tf1.train.Server
    yield module
    del sys.modules[name]


@pytest.fixture(scope="module")
def trained(tf_cluster, capstone):
    """Records of both workers training asynchronously to global step ``STEPS``; the chief
    holds after its first step until worker 1 has made one, so both surely update."""
    spec = capstone.tf.train.ClusterSpec(tf_cluster.spec.as_dict())
    models = [capstone.build_model(spec, i) for i in range(2)]
    first = [threading.Event(), threading.Event()]

    def on_step(record):
        first[record["worker"]].set()
        if record["worker"] == 0 and record["step"] == 1:
            first[1].wait(60)
    records: dict[int, list] = {}

    def train(i):
        records[i] = capstone.train_worker(tf_cluster.target("worker", i), models[i], STEPS,
                                           on_step=on_step)
    threads = [threading.Thread(target=train, args=(i,), daemon=True) for i in range(2)]
    threads[0].start()
    assert first[0].wait(60), "the chief made no step"
    threads[1].start()      # after the chief's init: no 30 s wait for an uninitialized model
    for thread in threads:
        thread.join(120)
    assert sorted(records) == [0, 1]
    return records


@needs_tf
def test_capstone_variables_live_on_the_tensorflow_ps(tf_cluster, capstone):
    spec = capstone.tf.train.ClusterSpec(tf_cluster.spec.as_dict())
    model = capstone.build_model(spec, 1)
    assert model.global_step.device == "/job:ps/task:0"
    assert model.x.device == "/job:worker/task:1"


@needs_tf
def test_capstone_loss_goes_down_on_tensorflow_servers(trained):
    steps = sorted(trained[0] + trained[1], key=lambda r: r["global_step"])
    first = sum(r["loss"] for r in steps[:3]) / 3
    last = sum(r["loss"] for r in steps[-3:]) / 3
    assert first > 2.0 and last < 0.6 * first


@needs_tf
def test_both_workers_update_the_shared_global_step(trained):
    assert trained[0] and trained[1]
    assert max(r["global_step"] for r in trained[0] + trained[1]) >= STEPS
    for records in trained.values():
        steps = [r["global_step"] for r in records]
        assert steps == sorted(set(steps)), "a worker's own steps each move the global step on"
    # TF reads the step after its update in a separate op (Identity of the ref), so when both
    # workers' updates land together, both can read the later value: a value is then seen
    # twice (seen in CI). Every update still counts once, so the last value read is the count.
    total = len(trained[0]) + len(trained[1])
    assert max(r["global_step"] for r in trained[0] + trained[1]) == total


@needs_tf
def test_task_logs_hold_tensorflows_own_startup_line(tf_cluster):
    target = tf_cluster.target("ps", 0)
    assert f"Started server with target: {target}" in tf_cluster.logs("ps", 0)


@needs_tf
def test_registry_entry_shows_the_tensorflow_backend(tf_cluster):
    from tfteach.notebook.lab_handlers import public_cluster

    [entry] = [c for c in registry.list_clusters() if c["id"] == tf_cluster.id]
    assert entry["backend"] == "tensorflow"
    assert public_cluster(entry, 0)["backend"] == "tensorflow"
    assert "backend='tensorflow'" in repr(tf_cluster)


@needs_tf
def test_task_health_reports_tensorflows_devices(tf_cluster):
    health = registry.task_health(tf_cluster.id, "worker", 1)
    assert health["alive"] and health["last_step"] is None
    assert [d["name"] for d in health["devices"]] == ["/job:worker/replica:0/task:1/device:CPU:0"]


@needs_tf
def test_a_tfteach_session_at_a_tensorflow_task_is_refused_with_a_hint(tf_cluster):
    import tfteach

    with pytest.raises(errors.UnimplementedError, match="TensorFlow's own server") as info:
        tfteach.Session(tf_cluster.target("worker", 0))
    assert "tensorflow.compat.v1" in info.value.hint


@needs_tf
def test_a_killed_tensorflow_task_is_dead_and_restarts_on_its_port(tf_cluster, tf1):
    old_pid = registry.find_task(registry.read_entry(tf_cluster.id), "worker", 1)["pid"]
    tf_cluster.kill("worker", 1)
    assert not tf_cluster.alive("worker", 1) and not pid_alive(old_pid)
    assert registry.task_health(tf_cluster.id, "worker", 1)["alive"] is False
    tf_cluster.restart("worker", 1)
    with tf1.Graph().as_default():
        with tf1.device("/job:worker/task:1"):
            six = tf1.constant(2.0) * 3.0
        with tf1.Session(tf_cluster.target("worker", 1)) as sess:
            assert sess.run(six) == 6.0
    assert tf_cluster.logs("worker", 1).count("Started server with target") == 2


@needs_tf
def test_close_stops_every_tensorflow_task(tf1):
    cluster = LocalCluster(ps=0, workers=1, backend="tensorflow")
    pids = [t["pid"] for t in registry.read_entry(cluster.id)["tasks"]]
    cluster.close()
    assert not any(pid_alive(pid) for pid in pids)
    assert "Stopping TensorFlow server" in cluster.logs("worker", 0)    # its own exit
    with pytest.raises(errors.NotFoundError):
        registry.read_entry(cluster.id)


@needs_tf
def test_a_script_that_ends_with_a_tensorflow_cluster_open_leaves_no_task(tf1):
    script = ("import json; from tfteach.distributed.local.local_cluster import LocalCluster; "
              "from tfteach.distributed.local import task_registry as registry; "
              "c = LocalCluster(ps=0, workers=1, backend='tensorflow'); "
              "print(json.dumps([t['pid'] for t in registry.read_entry(c.id)['tasks']]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[3])
    assert done.returncode == 0, done.stderr[-3000:]
    pids = json.loads(done.stdout.splitlines()[-1])
    assert wait_gone(pids, 10) == []


def test_without_tensorflow_the_error_says_how_to_install(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorflow" else real_find_spec(name, *a))
    with pytest.raises(errors.FailedPreconditionError, match="needs TensorFlow") as info:
        LocalCluster(ps=1, workers=1, backend="tensorflow")
    assert 'pip install "tfteach[conformance]"' in info.value.hint


def test_tfteach_engine_settings_are_refused_with_the_tensorflow_backend():
    with pytest.raises(ValueError, match="tfteach's engine"):
        LocalCluster(ps=1, workers=1, gpus_per_task=2, backend="tensorflow")
