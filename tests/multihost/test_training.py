"""Between-graph training with one task per host: a ps and two workers on three hosts.

- ``python -m tfteach.examples.distributed_digits --sync``: MonitoredTrainingSession and
  SyncReplicasOptimizer, variables on the ps host; the chief's test accuracy is that of a
  trained model (guessing gets 10 %).
- ``trainer.py`` (TF's distributed MNIST example's shape) trains asynchronously: every
  worker that ran steps ends at w = 2, b = 1. (On TensorFlow the same program takes over
  30 s here, a non-chief worker's first readiness wait: tests/programs compares the two.)
"""
from __future__ import annotations

import re

import pytest

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
