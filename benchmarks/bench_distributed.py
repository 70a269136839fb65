"""Distributed training throughput: sync and async with 1 ps and 1, 2, 3 workers.

Each run trains the digits softmax regression (``tfteach.examples.distributed_digits``) on a
real LocalCluster (every task a process, gRPC on loopback), with one client thread per
worker, to a fixed global step. Reported per run:

- global steps per second, and *gradients* per second (sync: each global step averages
  ``workers`` gradients; async: one gradient per step);
- scaling efficiency = gradients/s with N workers / (N x gradients/s with 1 worker), the
  baseline measured in the same run (1.0 = perfect scaling);
- how busy the machine's CPU cores were during the run (from /proc/stat).

Run: ``python benchmarks/bench_distributed.py`` (``--quick`` for fewer steps).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tfteach import experiments
from tfteach.distributed.local.local_cluster import LocalCluster
from tfteach.examples.distributed_digits import GRAPH_ENGINE

WORKERS = (1, 2, 3)


def cpu_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, from /proc/stat (Linux)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def measure(workers: int, steps: int) -> dict:
    """Both modes on one fresh cluster with ``workers`` workers."""
    out = {}
    with LocalCluster(ps=1, workers=workers, engine=GRAPH_ENGINE) as cluster:
        experiments.sync_vs_async(workers=workers, steps=10, cluster=cluster)   # warm-up
        for mode in ("sync", "async"):
            busy0, total0 = cpu_jiffies()
            result = experiments.sync_vs_async(workers=workers, steps=steps, modes=(mode,),
                                               cluster=cluster)
            busy1, total1 = cpu_jiffies()
            grads = len(result[mode]) / result["wall_time"][mode]
            out[mode] = {"steps_per_s": result["steps_per_second"][mode], "grads_per_s": grads,
                         "accuracy": result["accuracy"][mode], "errors": result["errors"][mode],
                         "cpu_busy": (busy1 - busy0) / max(total1 - total0, 1)}
    return out


def explanation(cores: int) -> str:
    return f"""
CPU busy: the share of all {cores} cores of this machine that was in use during the run
(everything on it counts, other programs too). Near 100% means the cores are the limit.

What limits scaling here ({cores} CPU cores for everything):
- Every task is a process (1 ps + N workers) and every worker also has a client thread in
  this process, so with 2 or 3 workers more processes want the CPU than there are cores.
- A step is mostly fixed overhead, not arithmetic: the digits model is a 64x10 matmul, but
  each step is a client->master RPC, RunGraph RPCs to the ps that carry the weights and
  the gradients (two or more phases per step: sync adds the accumulators and the token
  queue), and Python work per op in each process. Adding workers
  adds these per-step costs; it does not split any large computation.
- The ps applies every update on its one device thread, so updates from all workers queue
  there; async steps also contend for it, sync adds the chief's aggregation step (take the
  averaged gradients, apply, hand out tokens) between global steps.
- Sync waits at a barrier every step (the token queue), so its throughput is set by the
  slowest worker of each step; async never waits but its gradients are stale.
On a machine with a core per task (or real machines) and a model whose step is dominated by
computation, efficiency would be much closer to 1.
"""


def main(argv: list[str]) -> None:
    steps = 60 if "--quick" in argv else 200
    rows = {n: measure(n, steps) for n in WORKERS}
    print(f"Distributed training on digits: 1 ps, LocalCluster, {steps} global steps per run")
    print(f"{'mode':<6}{'workers':>8}{'steps/s':>10}{'grads/s':>10}{'efficiency':>12}"
          f"{'accuracy':>10}{'CPU busy':>10}")
    for mode in ("sync", "async"):
        base = rows[1][mode]["grads_per_s"]
        for n in WORKERS:
            r = rows[n][mode]
            eff = r["grads_per_s"] / (n * base)
            acc = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "-"
            print(f"{mode:<6}{n:>8}{r['steps_per_s']:>10.1f}{r['grads_per_s']:>10.1f}"
                  f"{eff:>12.2f}{acc:>10}{r['cpu_busy']:>10.0%}" +
                  (f"  errors: {r['errors']}" if r["errors"] else ""))
    print(explanation(os.cpu_count() or 1))


if __name__ == "__main__":
    t = time.time()
    main(sys.argv[1:])
    print(f"(took {time.time() - t:.0f} s)")
