"""Modelled hardware against this machine: predicted and measured step times.

Calibrates this machine (``tfteach.hardware.calibrate``), then for each validation graph
(the lessons' models, the training benchmark's MLP, matmul chains, many small ops, large
element-wise ops and reductions) predicts the single-device step time with that profile and
measures the same step in a tfteach Session (median of several timed rounds of the step
thread's CPU time, which other jobs on a shared machine do not inflate; ``--wall`` for
wall-clock time), in several passes each calibrating first, printing each error and the
median and worst. It also checks that predicting twice gives the same
estimate. Goal: median |error| <= 15 %, worst <= 35 %. The same code runs as
``python -m tfteach.hardware validate``.

Run: ``python benchmarks/bench_hardware.py`` (``--quick`` for fewer rounds, ``--wall``).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tfteach.hardware import validation  # noqa: E402
from tfteach.hardware.predict import predict  # noqa: E402


def deterministic(profile: object) -> bool:
    """Whether every case's estimate is the same twice (step time and step stats)."""
    for case in validation.CASES.values():
        g, fetch, feed, _ = validation._build(case)
        a, b = (predict(fetch, feed, profile=profile, graph=g) for _ in range(2))
        if a.step_time_s != b.step_time_s or \
                a.run_metadata.step_stats != b.run_metadata.step_stats:
            return False
    return True


def main(argv: list[str]) -> int:
    repeat, passes = (5, 1) if "--quick" in argv else (9, 5)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; per graph the "
          f"median of {passes} passes, each the median of {repeat} rounds of 5 steps")
    clock = "wall" if "--wall" in argv else "thread"
    profile, rows = validation.validate(repeat=repeat, passes=passes, clock=clock)
    print(profile.text())
    print()
    print(validation.table(rows))
    print(f"estimates deterministic: {deterministic(profile)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
