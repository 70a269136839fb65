"""Whole TF1 programs in the tutorials' style, run as processes to their exit.

Each program runs on tfteach and, where TensorFlow is installed, on real TensorFlow's
``compat.v1`` (the ``tensorflow`` parameter, marked ``conformance``): both must print the
same values, end with the same status, and exit soon after their last line (tfteach within
2 s; TF's own teardown gets longer on a loaded machine). A
tfteach program must also leave nothing behind: no process it started, no shared memory.
Tasks that serve forever (a ps, ``server.join()``) are ended with SIGTERM, which must end
them at once on both runtimes.

Deliberate difference: a worker whose ps never starts waits forever on TF ("CreateSession
still waiting for response from worker"), even with ``operation_timeout_in_ms``; tfteach
prints the same line, then gives up after ``operation_timeout_in_ms`` with
UnavailableError and a Hint naming the missing task.
"""
from __future__ import annotations

import re
import signal

import pytest

from harness import has_tensorflow, stop, write_cluster
from tfteach.distributed.transport.processes import free_ports

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

EXIT_S = {"tfteach": 2.0,      # from the last line to the exit, as a TF program
          "tensorflow": 10.0}  # TF's own teardown takes over 2 s on a loaded machine
BACKENDS = ["tfteach", pytest.param("tensorflow", marks=[
    pytest.mark.conformance,
    pytest.mark.skipif(not has_tensorflow(), reason="TensorFlow is not installed "
                       "(pip install -e '.[conformance]')")])]


def finished(proc, timeout: float = 120.0, status: int = 0):
    """Wait for ``proc``; check its status, its exit time and (tfteach) its leftovers."""
    rc = proc.wait(timeout)
    assert rc == status, f"exit status {rc}:\n{proc.transcript()}"
    assert proc.exit_delay() < EXIT_S[proc.backend], \
        f"exited {proc.exit_delay():.1f} s after its last line:\n{proc.transcript()}"
    if proc.backend == "tfteach":
        assert proc.leftovers() == []
    return proc


def served(proc, pattern: str = "Starting server"):
    proc.wait_for(pattern)
    return proc


def ended_by_sigterm(*procs) -> None:
    """A serving task ends at once on SIGTERM, dying of it (as a TF server does)."""
    stop(*procs)
    for proc in procs:
        assert proc.popen.returncode == -signal.SIGTERM, \
            f"status {proc.popen.returncode}:\n{proc.transcript()}"
        if proc.backend == "tfteach":
            assert proc.leftovers() == []


def hosts(n: int) -> list[str]:
    return [f"localhost:{port}" for port in free_ports(n)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_hello_world_on_a_local_server_prints_and_exits(backend, start):
    proc = finished(start("hello_local_server.py", backend=backend))
    assert proc.stdout.splitlines() == ["b'Hello, distributed TensorFlow!'"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_local_tasks_compute_across_processes(backend, start, tmp_path):
    port0, port1 = free_ports(2)
    cluster = write_cluster(tmp_path / "cluster.json",
                            {"local": [f"localhost:{port0}", f"localhost:{port1}"]})
    task1 = served(start("join_server.py", cluster, "local", 1, backend=backend))
    try:
        main = finished(start("local_two_tasks.py", port0, port1, backend=backend))
        assert main.stdout.splitlines() == ["238"]
    finally:
        ended_by_sigterm(task1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_config_json_servers_started_from_the_command_line(backend, start, tmp_path):
    write_cluster(tmp_path / "config.json", {"worker": hosts(2)})
    servers = [served(start("config_server.py", task, backend=backend),
                      f"Starting server #{task}") for task in (0, 1)]
    try:
        client = finished(start("config_client.py", backend=backend))
        assert client.stdout.splitlines() == ["238"]
    finally:
        ended_by_sigterm(*servers)


def run_trainers(start, backend, workers: int, *flags: str,
                 script: str = "trainer.py") -> list:
    """One ps and ``workers`` workers of ``script``; the workers' last lines."""
    ps_host, *worker_hosts = hosts(1 + workers)
    common = [f"--ps_hosts={ps_host}", f"--worker_hosts={','.join(worker_hosts)}",
              *flags]
    ps = start(script, *common, "--job_name=ps", backend=backend)
    procs = []
    try:
        procs = [start(script, *common, "--job_name=worker", f"--task_index={i}",
                       backend=backend) for i in range(workers)]
        return [finished(proc, timeout=180).stdout.splitlines()[-1] for proc in procs]
    finally:
        for proc in procs:
            proc.kill()             # only one that failed is still running
        ended_by_sigterm(ps)


TRAINED = re.compile(r"worker (\d): (\d+) local steps, w=([-\d.na]+) b=([-\d.na]+)")


def assert_trained(lines: list, workers: int) -> list[int]:
    """Every worker that ran steps saw w ~ 2 and b ~ 1; return each one's local steps."""
    found = [TRAINED.fullmatch(line) for line in lines]
    assert all(found) and len(found) == workers, lines
    for match in found:
        if int(match.group(2)):
            assert abs(float(match.group(3)) - 2) < 0.1 and abs(float(match.group(4)) - 1) < 0.1
    return [int(match.group(2)) for match in found]


@pytest.mark.parametrize("backend", BACKENDS)
def test_between_graph_training_with_monitored_sessions(backend, start):
    steps = assert_trained(run_trainers(start, backend, 2, "--steps=150"), 2)
    assert steps[0] > 0                 # the chief trained; a late worker may find it done


@pytest.mark.parametrize("backend", BACKENDS)
def test_between_graph_training_with_a_supervisor(backend, start, tmp_path):
    lines = run_trainers(start, backend, 2, "--steps=150", "--supervisor",
                         f"--logdir={tmp_path / 'logs'}")
    assert assert_trained(lines, 2)[0] > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_sync_replicas_with_a_backup_worker(backend, start):
    lines = run_trainers(start, backend, 3, "--steps=60", "--replicas_to_aggregate=2")
    assert sum(assert_trained(lines, 3)) >= 2 * 60      # two gradients per global step


def test_a_sync_replicas_chief_exits_on_its_own(start):
    """TF's mnist_replica.py shape: the chief's sync token queue runner is still in a step
    waiting on the ps when the program ends, and nothing closes the session; the chief
    exits all the same (its master's pool thread waited on the ps forever before)."""
    lines = run_trainers(start, "tfteach", 2, "--sync_replicas", "--train_steps=30",
                         script="replica_trainer.py")
    losses = [float(re.fullmatch(r"After 30 training step\(s\), validation loss = "
                                 r"([\d.]+)", line).group(1)) for line in lines]
    assert losses[0] == losses[1] < 0.01, lines


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_graph_towers_over_two_workers(backend, start, tmp_path):
    ps, *workers = hosts(3)
    cluster = write_cluster(tmp_path / "cluster.json", {"ps": [ps], "worker": workers})
    tasks = [served(start("join_server.py", cluster, job, task, backend=backend))
             for job, task in (("ps", 0), ("worker", 0), ("worker", 1))]
    try:
        client = finished(start("in_graph_towers.py", cluster, backend=backend))
        w, b = (float(v) for v in re.fullmatch(r"w=([-\d.]+) b=([-\d.]+)",
                                               client.stdout).groups())
        assert abs(w - 2.0) < 0.05 and abs(b - 1.0) < 0.05
    finally:
        ended_by_sigterm(*tasks)


def test_a_worker_whose_ps_never_starts_gives_up_with_a_hint(start):
    ps_port, worker_port = free_ports(2)
    proc = start("unreachable_ps.py", ps_port, worker_port, 11000)
    proc.wait(60)
    assert proc.popen.returncode == 1
    assert "CreateSession still waiting for response from worker: /job:ps/replica:0/task:0" \
        in proc.stderr
    assert "UnavailableError" in proc.stderr and "/job:ps/replica:0/task:0" in proc.stderr
    assert "Hint:" in proc.stderr
    assert proc.leftovers() == []


@pytest.mark.conformance
@pytest.mark.skipif(not has_tensorflow(), reason="TensorFlow is not installed")
def test_tensorflow_waits_forever_for_a_ps_that_never_starts(start):
    """The difference the tfteach test above states: TF keeps waiting past the timeout."""
    ps_port, worker_port = free_ports(2)
    proc = start("unreachable_ps.py", ps_port, worker_port, 3000, backend="tensorflow")
    try:
        proc.wait_for("CreateSession still waiting for response from worker: "
                      "/job:ps/replica:0/task:0", timeout=60)
        assert proc.popen.poll() is None        # still waiting, well past 3000 ms
    finally:
        proc.kill()
