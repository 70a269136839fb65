"""Between-graph training with one task per host: a ps and two workers on three hosts.

- ``python -m tfteach.examples.distributed_digits --sync``: MonitoredTrainingSession and
  SyncReplicasOptimizer, variables on the ps host; the chief's test accuracy is that of a
  trained model (guessing gets 10 %).
- ``trainer.py`` (TF's distributed MNIST example's shape) trains asynchronously: every
  worker that ran steps ends at w = 2, b = 1. (On TensorFlow the same program takes over
  30 s here, a non-chief worker's first readiness wait: tests/programs compares the two.)
- The same two trainers on TensorFlow's servers, on the same three hosts, end where
  tfteach's do. Its non-chief would wait 30 s for a model the chief has not initialized yet
  (``SessionManager``'s ``recovery_wait_secs``): worker 1 starts once the chief has made
  a step (sync), or runs under a Supervisor with ``recovery_wait_secs=1`` (async).
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness import TF_IMPORT, Process
from on_hosts import ON_TF, environment

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

DIGITS = "tfteach.examples.distributed_digits"
TRAINED = re.compile(r"worker (\d): (\d+) local steps, w=([-\d.na]+) b=([-\d.na]+)")


def cluster_flags(hosts) -> list[str]:
    return [f"--ps_hosts={hosts.address(0)}:2222",
            f"--worker_hosts={hosts.address(1)}:2222,{hosts.address(2)}:2222"]


def run_workers(start, hosts, program: str, flags: list[str]) -> list[list[str]]:
    """A ps on host 0 and workers on hosts 1 and 2; each worker's output lines."""
    start(hosts, 0, program, *flags, "--job_name=ps")
    workers = [start(hosts, 1 + task, program, *flags, "--job_name=worker",
                     f"--task_index={task}") for task in (0, 1)]
    for worker in workers:
        assert worker.wait(180) == 0, worker.transcript()
    return [worker.stdout.splitlines() for worker in workers]


def test_sync_replicas_trainer_on_three_hosts(make_hosts, start):
    hosts = make_hosts(3)
    chief, other = run_workers(start, hosts, DIGITS,
                               [*cluster_flags(hosts), "--sync", "--steps=60", "--log_every=0"])
    assert re.fullmatch(r"worker 0: done after \d+ local steps, global step 6\d", chief[0]), chief
    assert re.fullmatch(r"worker 1: done after \d+ local steps, global step (6\d|not reached)",
                        other[-1]), other
    accuracy = float(re.fullmatch(r"test accuracy: ([\d.]+)", chief[-1]).group(1))
    assert accuracy > 0.5, chief


def test_async_between_graph_training_on_three_hosts(make_hosts, start):
    hosts = make_hosts(3)
    outputs = run_workers(start, hosts, "trainer.py", [*cluster_flags(hosts), "--steps=100"])
    found = [TRAINED.fullmatch(lines[-1]) for lines in outputs]
    assert all(found), outputs
    for match in found:
        if int(match.group(2)):
            assert abs(float(match.group(3)) - 2) < 0.1 and abs(float(match.group(4)) - 1) < 0.1
    assert sum(int(match.group(2)) for match in found) >= 100


def on_tf(test):
    """``test`` marked as a TensorFlow comparison (skipped without TensorFlow)."""
    for mark in ON_TF:
        test = mark(test)
    return test


def _digits_on(backend: str, workdir: Path) -> list[str]:
    """The sync digits trainer's command on ``backend`` (on TensorFlow, the learner's
    copy: the same file with its import line changed)."""
    if backend == "tfteach":
        return ["-m", DIGITS]
    source = Path(importlib.util.find_spec(DIGITS).origin).read_text()
    copy = workdir / "distributed_digits_on_tensorflow.py"
    copy.write_text(source.replace("import tfteach as tf\n", TF_IMPORT + "\n"))
    return [str(copy)]


def _sync_digits(hosts, backend: str, workdir: Path) -> tuple[list[str], list[str]]:
    """The ps, then the chief, then (once the chief made a step, so its model is
    initialized) worker 1; both workers' output lines."""
    argv = [sys.executable, *_digits_on(backend, workdir), *cluster_flags(hosts), "--sync",
            "--steps=60", "--log_every=1"]

    def run(host: int, *flags: str) -> Process:
        return Process(hosts.popen(host, [*argv, *flags], cwd=workdir,
                                   env=environment(backend), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, errors="replace"), backend)
    run(0, "--job_name=ps")
    chief = run(1, "--job_name=worker", "--task_index=0")
    chief.wait_for(r"^worker 0: step 1, ", timeout=120)
    other = run(2, "--job_name=worker", "--task_index=1")
    for worker in (chief, other):
        assert worker.wait(180) == 0, worker.transcript()
    return chief.stdout.splitlines(), other.stdout.splitlines()


@on_tf
def test_sync_digits_trainer_ends_as_on_tensorflow_on_three_hosts(make_hosts, tmp_path):
    """Which worker's gradients make up each of the 60 steps depends on timing, so the two
    runtimes' models differ; both reach global step 60 and test accuracies within 0.1
    (guessing gets 0.1)."""
    accuracy = {}
    for backend in ("tfteach", "tensorflow"):
        chief, other = _sync_digits(make_hosts(3), backend, tmp_path)
        assert re.fullmatch(r"worker 0: done after \d+ local steps, global step 6\d",
                            chief[-2]), (backend, chief)
        assert other[-1].startswith("worker 1: done after "), (backend, other)
        accuracy[backend] = float(re.fullmatch(r"test accuracy: ([\d.]+)", chief[-1]).group(1))
    assert min(accuracy.values()) > 0.5, accuracy
    assert abs(accuracy["tfteach"] - accuracy["tensorflow"]) <= 0.1, accuracy


@on_tf
def test_async_trainer_ends_as_on_tensorflow_on_three_hosts(make_hosts, start):
    """Asynchronous updates interleave as timing has it: every worker that ran steps on
    either runtime ends within 0.1 of w = 2, b = 1, and the two runtimes' chiefs within 0.1
    of each other."""
    chiefs = {}
    for backend in ("tfteach", "tensorflow"):
        hosts = make_hosts(3)
        flags = [*cluster_flags(hosts), "--steps=100", "--supervisor"]
        start(hosts, 0, "trainer.py", *flags, "--job_name=ps", backend=backend)
        workers = [start(hosts, 1 + task, "trainer.py", *flags, "--job_name=worker",
                         f"--task_index={task}", backend=backend) for task in (0, 1)]
        found = []
        for worker in workers:
            assert worker.wait(180) == 0, worker.transcript()
            found.append(TRAINED.fullmatch(worker.stdout.splitlines()[-1]))
        assert all(found), (backend, [w.transcript() for w in workers])
        for match in found:
            if int(match.group(2)):
                assert abs(float(match.group(3)) - 2) < 0.1, (backend, match.group(0))
                assert abs(float(match.group(4)) - 1) < 0.1, (backend, match.group(0))
        assert int(found[0].group(2)) > 0, backend
        chiefs[backend] = (float(found[0].group(3)), float(found[0].group(4)))
    assert abs(chiefs["tfteach"][0] - chiefs["tensorflow"][0]) < 0.1, chiefs
    assert abs(chiefs["tfteach"][1] - chiefs["tensorflow"][1]) < 0.1, chiefs
