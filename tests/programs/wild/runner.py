"""Run a corpus program as processes on one runtime, and compare two runs.

``run(program, backend, workdir)`` starts the program (a cluster program: its ps tasks,
then its workers, with free loopback ports), waits for every process that ends by itself,
ends the serving ones with SIGTERM, and returns what a learner would look at, per process:
``{"status": exit status, "stdout": printed lines, "placements": [lines of
log_device_placement], "error": the class of the exception that ended it, or None}``
(a traceback a process only logged, and survived, is not its error).

``differences(program, expected, actual)`` lists how ``actual`` differs from ``expected``:
statuses, errors and placements exactly; printed lines token by token, their text exactly
and their numbers within the program's ``rtol``/``atol``.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))          # harness, beside this folder

from harness import start_file, stop  # noqa: E402
from tfteach.distributed.transport.processes import free_ports  # noqa: E402

from corpus import Program  # noqa: E402

PLACEMENT = re.compile(r"^(\S+): \((\w+)\): (/job:\S+)$")
DEVICE_MAPPING = re.compile(r"^(Device mapping|/job:\S+ -> )")
ERROR = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit)): ")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def _outcome(proc, status: int) -> dict:
    out = proc.stdout.splitlines()
    errors = [m.group(1).rsplit(".", 1)[-1] for line in proc.stderr.splitlines()
              if (m := ERROR.match(line))]
    return {"status": status,
            "stdout": [line for line in out if not PLACEMENT.match(line)
                       and not DEVICE_MAPPING.match(line)],
            "placements": sorted({line for line in out if PLACEMENT.match(line)}),
            "error": errors[-1] if errors and status != 0 else None}


def _fields(program: Program, workdir: Path) -> dict:
    ports = free_ports(program.ps + program.workers + program.ports)
    hosts = [f"localhost:{p}" for p in ports]
    return {"ps_hosts": ",".join(hosts[:program.ps]),
            "worker_hosts": ",".join(hosts[program.ps:program.ps + program.workers]),
            "ports": ",".join(str(p) for p in ports[program.ps + program.workers:]),
            "logdir": str(workdir / "logs")}


def run(program: Program, backend: str, workdir: Path) -> dict:
    """Every process's outcome, by role: ``main``, or ``ps0``, ``worker0``, ``worker1``..."""
    fields = _fields(program, workdir)
    env = {"WILD_BACKEND": backend, **program.env}
    path = HERE / program.file

    def start(**more):
        args = [a.format(**fields, **more) for a in program.args]
        return start_file(path, *args, backend=backend, cwd=workdir, env=env)
    if not program.ps and not program.workers:
        proc = start()
        return {"main": _outcome(proc, proc.wait(program.timeout))}
    servers = [start(job_name="ps", task_index=i) for i in range(program.ps)]
    workers = [start(job_name="worker", task_index=i) for i in range(program.workers)]
    try:
        return {f"worker{i}": _outcome(w, w.wait(program.timeout))
                for i, w in enumerate(workers)}
    finally:
        stop(*servers, *workers)


def _line_differs(expected: str, actual: str, rtol: float, atol: float) -> bool:
    if NUMBER.sub("#", expected) != NUMBER.sub("#", actual):
        return True
    for want, got in zip(NUMBER.findall(expected), NUMBER.findall(actual), strict=True):
        a, b = float(got), float(want)
        if a != b and not abs(a - b) <= atol + rtol * abs(b):
            return True
    return False


def differences(program: Program, expected: dict, actual: dict) -> list[str]:
    """What differs between two runs' outcomes (empty: they behave alike)."""
    found = []
    for role in sorted(set(expected) | set(actual)):
        want, got = expected.get(role), actual.get(role)
        if want is None or got is None:
            found.append(f"{role}: only in {'actual' if want is None else 'expected'}")
            continue
        for key in ("status", "error") + (("placements",) if program.placements else ()):
            if want[key] != got[key]:
                found.append(f"{role} {key}: expected {want[key]!r}, got {got[key]!r}")
        if len(want["stdout"]) != len(got["stdout"]):
            found.append(f"{role} printed {len(got['stdout'])} lines, expected "
                         f"{len(want['stdout'])}:\n  " + "\n  ".join(got["stdout"][-12:]))
            continue
        found += [f"{role} line {i}: expected {w!r}, got {g!r}"
                  for i, (w, g) in enumerate(zip(want["stdout"], got["stdout"], strict=True))
                  if _line_differs(w, g, program.rtol, program.atol)]
    return found
