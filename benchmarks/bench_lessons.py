"""Lesson run times: each lesson top to bottom in a fresh kernel, as a learner's Run All.

Each notebook runs in the environment the lesson tests use (``tests/lessons/lesson_tools``:
this checkout on PYTHONPATH, two virtual GPUs, no token), from a copy in a temporary folder
(the tracked lessons are not touched). Reported per lesson: seconds from the first cell's
start to the last cell's reply (the kernel's own start-up is shown apart), and its slowest
cells. Cells that need a package this Python lacks (``{"tfteach": {"needs": ...}}``) are
skipped, as nbval skips them. Goal: each lesson <= 20 s on a 2-core machine. The load
average is printed before and after: other jobs on the machine slow every lesson alike.

Run: ``python benchmarks/bench_lessons.py [NN ...]`` (lesson numbers; all by default).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "lessons"))

import nbformat  # noqa: E402
from lesson_tools import LESSONS, lesson_env, needs_missing_package  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

GOAL_S = 20.0


def _stamp(cell, key: str) -> float:
    return datetime.fromisoformat(cell.metadata["execution"][key].replace("Z", "+00:00")
                                  ).timestamp()


def run_lesson(path: Path, workdir: Path) -> tuple[float, float, list[tuple[float, str]]]:
    """Kernel start-up seconds, run seconds (first cell's start to last reply), slow cells."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and needs_missing_package(c))]
    copy = workdir / path.name
    nbformat.write(nb, copy)
    client = NotebookClient(nb, timeout=600, record_timing=True,
                            resources={"metadata": {"path": str(workdir)}})
    started = time.perf_counter()
    with client.setup_kernel(env=lesson_env(workdir / "registry")):
        ready = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    code = [c for c in nb.cells if c.cell_type == "code"]
    run_s = _stamp(code[-1], "shell.execute_reply") - _stamp(code[0], "iopub.execute_input")
    cells = sorted(((_stamp(c, "shell.execute_reply") - _stamp(c, "iopub.execute_input"),
                     c.source.splitlines()[0][:60]) for c in code), reverse=True)
    return ready - started, run_s, cells[:3]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", type=int, help="lesson numbers (default: all)")
    args = parser.parse_args(argv)
    paths = sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))
    if args.lessons:
        paths = [p for p in paths if int(p.name[:2]) in args.lessons]
    print(f"{os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.1f}")
    over = []
    for path in paths:
        with tempfile.TemporaryDirectory() as tmp:
            startup, run_s, slow = run_lesson(path, Path(tmp))
        mark = "" if run_s <= GOAL_S else f"  (over {GOAL_S:.0f} s)"
        print(f"{path.stem:36s} {run_s:6.1f} s  (kernel start {startup:.1f} s){mark}")
        for seconds, first_line in slow:
            print(f"    {seconds:5.1f} s  {first_line}")
        if run_s > GOAL_S:
            over.append(path.stem)
    print(f"load average after: {os.getloadavg()[0]:.1f}; over {GOAL_S:.0f} s: {over or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
