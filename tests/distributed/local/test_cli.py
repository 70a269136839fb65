"""`tfteach-server` (python -m tfteach.server): flags, config files, clean exit on signals."""
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dist_helpers import ENGINE, TESTS_DIR, port_is_free

from tfteach import errors
from tfteach.distributed.local.server_cli import load_cluster, parse_args
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.transport.processes import free_ports

ROOT = Path(__file__).parents[3]
pytestmark = pytest.mark.timeout(60)


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), TESTS_DIR]))
    env.pop("TFTEACH_CLUSTER_TOKEN", None)
    env.update(extra)
    return env


def _start(args, env=None):
    """Start a task; return (process, the stderr line naming its target)."""
    proc = subprocess.Popen([sys.executable, "-m", "tfteach.server", *args],
                            env=env or _env(), stderr=subprocess.PIPE, text=True)
    selector = selectors.DefaultSelector()
    selector.register(proc.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and selector.select(deadline - time.monotonic()):
        line = proc.stderr.readline()
        if not line or "Started server with target:" in line:
            return proc, line
    return proc, ""


def _stop(proc, signum):
    proc.send_signal(signum)
    return proc.wait(30)




@pytest.mark.cluster
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_seed_flags_start_a_task_that_exits_cleanly_on_signal(signum):
    ps, worker = free_ports(2)
    proc, line = _start([f"--ps_hosts=localhost:{ps}", f"--worker_hosts=localhost:{worker}",
                         "--job_name=ps", "--task_index=0"])
    try:
        assert line.strip().endswith(f"Started server with target: grpc://localhost:{ps}")
        status = ClusterClient().worker(f"localhost:{ps}").get_status(timeout=10)
        assert status["task"] == "/job:ps/replica:0/task:0"
    finally:
        code = _stop(proc, signum)
    assert code == 0 and port_is_free(ps)


@pytest.mark.cluster
@pytest.mark.parametrize("wrapped", [True, False], ids=["with-cluster-key", "bare-dict"])
def test_cluster_json_in_either_form(tmp_path, wrapped):
    ports = free_ports(2)
    cluster = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"cluster": cluster, "note": "x"} if wrapped else cluster))
    proc, line = _start(["--cluster", str(path), "--job", "worker", "--task", "0"])
    try:
        assert f"grpc://localhost:{ports[1]}" in line
    finally:
        assert _stop(proc, signal.SIGTERM) == 0


@pytest.mark.cluster
def test_token_and_virtual_gpus_reach_the_task_from_env_and_flag():
    port = free_ports(1)[0]
    proc, line = _start([f"--worker_hosts=localhost:{port}", "--job", "worker", "--task", "0",
                         "--virtual-gpus", "3", "--engine", ENGINE],
                        env=_env(TFTEACH_CLUSTER_TOKEN="tok"))
    try:
        assert line
        with pytest.raises(errors.UnauthenticatedError):
            ClusterClient().worker(f"localhost:{port}").get_status(timeout=10)
        device = ClusterClient("tok").worker(f"localhost:{port}").get_status(10)["devices"][0]
        assert json.loads(device["physical_device_desc"])["TFTEACH_VIRTUAL_GPUS"] == "3"
    finally:
        assert _stop(proc, signal.SIGINT) == 0


@pytest.mark.cluster
def test_non_loopback_address_without_token_exits_1_with_the_reason():
    result = subprocess.run([sys.executable, "-m", "tfteach.server",
                             "--worker_hosts=0.0.0.0:1", "--job", "worker", "--task", "0"],
                            env=_env(), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "without a cluster token" in result.stderr and "--insecure" in result.stderr


def test_the_token_cannot_be_given_on_the_command_line():
    with pytest.raises(SystemExit):
        parse_args(["--token", "secret", "--job", "ps"])


def test_seed_flags_and_extra_jobs_build_the_cluster():
    args, jobs = parse_args(["--ps_hosts=a:1,b:1", "--worker_hosts", "c:1",
                             "--chief_hosts=d:1", "--job_name=ps", "--task_index=1"])
    assert (args.job, args.task) == ("ps", 1)
    assert load_cluster(None, jobs) == {"ps": ["a:1", "b:1"], "worker": ["c:1"],
                                        "chief": ["d:1"]}


def test_sparse_jobs_in_json_get_integer_indices(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"worker": {"1": "w1:1", "3": "w3:1"}}))
    assert load_cluster(str(path), {}) == {"worker": {1: "w1:1", 3: "w3:1"}}


@pytest.mark.cluster
@pytest.mark.slow
def test_a_task_whose_stop_hangs_still_exits_after_the_grace_period():
    from tfteach.distributed.local.server_cli import EXIT_GRACE_S

    ps, = free_ports(1)
    proc, line = _start([f"--ps_hosts=localhost:{ps}", "--job_name=ps", "--task_index=0"],
                        env=_env(TFTEACH_ENGINE="dist_helpers:StuckOnCloseEngine"))
    assert "Started server with target" in line
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(EXIT_GRACE_S + 20) == 0
    assert EXIT_GRACE_S - 1 <= time.monotonic() - t0 < EXIT_GRACE_S + 20
    assert "did not stop within" in proc.stderr.read()


def test_a_signal_while_the_main_thread_holds_the_stop_flags_lock_does_not_deadlock():
    """A signal handler runs between any two bytecodes of the main thread, also while it
    holds the lock inside Event.wait. The old handler (``stop_event.set``) then waited for
    that lock forever: a LocalCluster task whose owner was killed under load never left.
    Here the lock is held and the handler runs on the same thread, as it would then."""
    import threading

    from tfteach.distributed.local.server_cli import StopFlag

    stop = StopFlag()
    outcome = []

    def main_thread_in_wait():
        with stop._event._cond:                 # where Event.wait holds it
            stop.on_signal(signal.SIGTERM, None)
            outcome.append("handled")
    runner = threading.Thread(target=main_thread_in_wait, daemon=True)
    runner.start()
    runner.join(5)
    assert outcome == ["handled"]
    assert stop.wait(0) and stop.is_set()
    watched = StopFlag()
    assert not watched.wait(0.01)
    watched.set()                                # the parent watch, from its thread
    assert watched.wait(0)


@pytest.mark.cluster
def test_sigterm_aborts_a_step_blocked_on_the_task_instead_of_waiting_for_the_grace_period():
    """A dequeue from an empty queue on the ps, run by a worker's session: SIGTERM to the
    ps ends that step at once, so the task stops by itself (not by the EXIT_GRACE_S
    fallback) and the client's step fails instead of hanging."""
    import threading

    import tfteach as tf
    from tfteach.distributed.local.server_cli import EXIT_GRACE_S

    ps, worker = free_ports(2)
    hosts = [f"--ps_hosts=localhost:{ps}", f"--worker_hosts=localhost:{worker}"]
    proc, line = _start([*hosts, "--job_name=ps", "--task_index=0"])
    assert "Started server with target" in line
    cluster = tf.train.ClusterSpec({"ps": [f"localhost:{ps}"], "worker": [f"localhost:{worker}"]})
    server = tf.train.Server(cluster, job_name="worker", task_index=0)
    graph, failures = tf.Graph(), []
    with graph.as_default(), tf.device("/job:ps/task:0"):
        dequeue = tf.FIFOQueue(1, tf.float32, shared_name="never_filled").dequeue()

    def step():
        with tf.Session(server.target, graph=graph) as sess:
            try:
                sess.run(dequeue)
            except errors.OpError as e:
                failures.append(e)
    client = threading.Thread(target=step, daemon=True)
    try:
        client.start()
        client.join(2)                      # the step is now waiting in the ps's queue
        assert client.is_alive()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(EXIT_GRACE_S + 20) == 0
        client.join(EXIT_GRACE_S + 20)
    finally:
        server.stop()
    assert "did not stop within" not in proc.stderr.read()
    assert not client.is_alive() and len(failures) == 1
