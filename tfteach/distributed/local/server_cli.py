"""``tfteach-server``: run one task of a cluster in this process until SIGINT/SIGTERM.

    tfteach-server --cluster cluster.json --job worker --task 0
    tfteach-server --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224 \\
                   --job_name=worker --task_index=1

``cluster.json`` is ``{"cluster": {"ps": [...], "worker": [...]}, ...}`` or just the cluster
dict. Any ``--<job>_hosts=a,b`` flag adds a job. The token comes only from the environment
(``TFTEACH_CLUSTER_TOKEN``); ``--insecure`` allows a non-loopback address without one.
``--virtual-gpus N`` sets ``TFTEACH_VIRTUAL_GPUS`` for the engine. When started by a parent
that sets ``TFTEACH_PARENT_PID`` (LocalCluster), the task exits when that parent dies.
Exit status: 0 after a signal (steps running on the task are aborted at once; within
``EXIT_GRACE_S`` even if stopping hangs), 1 when the server cannot start.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
from typing import Any, Sequence

PARENT_PID_ENV = "TFTEACH_PARENT_PID"
EXIT_GRACE_S = 10.0      # a task told to stop leaves after this long even if stopping hangs
_HOSTS_FLAG = re.compile(r"^--(\w+)_hosts(?:=(.*))?$")


_DESCRIPTION = "Run one task of a cluster in this process until SIGINT or SIGTERM."
_EPILOG = """examples:
  tfteach-server --cluster cluster.json --job worker --task 0
  tfteach-server --ps_hosts=localhost:2222 --worker_hosts=localhost:2223,localhost:2224 \\
                 --job_name=worker --task_index=1

cluster.json holds {"cluster": {"ps": [...], "worker": [...]}} or just the cluster dict;
any --<job>_hosts=a,b flag adds a job. The cluster token comes only from the environment
(TFTEACH_CLUSTER_TOKEN). Exit status: 0 after SIGINT/SIGTERM, 1 when the task cannot start."""


def _version() -> str:
    """The installed tfteach's version (``0+unknown`` from a source tree)."""
    from importlib import metadata

    try:
        return metadata.version("tfteach")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def parse_args(argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, list[str]]]:
    """Parse the command line; return the options and the ``--<job>_hosts`` jobs."""
    parser = argparse.ArgumentParser(prog="tfteach-server", description=_DESCRIPTION,
                                     epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tfteach-server {_version()}")
    parser.add_argument("--cluster", help="JSON file with the cluster spec")
    parser.add_argument("--job", "--job_name", dest="job", help="this task's job name")
    parser.add_argument("--task", "--task_index", dest="task", type=int,
                        help="this task's index in its job")
    parser.add_argument("--insecure", action="store_true",
                        help="serve a non-loopback address without a cluster token")
    parser.add_argument("--virtual-gpus", "--virtual_gpus", dest="virtual_gpus", type=int,
                        help="number of virtual GPUs for this task's engine")
    parser.add_argument("--engine", help="engine factory as package.module:attr")
    args, rest = parser.parse_known_args(list(argv))
    return args, _hosts_flags(parser, rest)


def _hosts_flags(parser: argparse.ArgumentParser, rest: list[str]) -> dict[str, list[str]]:
    jobs: dict[str, list[str]] = {}
    items = iter(rest)
    for item in items:
        match = _HOSTS_FLAG.match(item)
        if not match:
            parser.error(f"unrecognized argument: {item}")
        value = match.group(2) if match.group(2) is not None else next(items, "")
        jobs[match.group(1)] = [host for host in value.split(",") if host]
    return jobs


def load_cluster(path: str | None, jobs: dict[str, list[str]]) -> dict[str, Any]:
    """The cluster dict from ``--cluster`` (either JSON form) merged with ``--*_hosts``."""
    cluster: dict[str, Any] = {}
    if path:
        with open(path) as handle:
            data = json.load(handle)
        data = data.get("cluster", data) if isinstance(data, dict) else data
        if not isinstance(data, dict):
            raise ValueError(f"{path} must hold a JSON object of jobs")
        cluster.update({job: _task_map(tasks) for job, tasks in data.items()})
    cluster.update(jobs)
    if not cluster:
        raise ValueError("no cluster given: use --cluster FILE or --ps_hosts/--worker_hosts")
    return cluster


def _task_map(tasks: Any) -> Any:
    if isinstance(tasks, dict):       # JSON keys are strings: {"1": "host:port"}
        return {int(index): address for index, address in tasks.items()}
    return tasks


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tfteach-server`` and ``python -m tfteach.server``."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    args, jobs = parse_args(sys.argv[1:] if argv is None else argv)
    if args.virtual_gpus is not None:
        os.environ["TFTEACH_VIRTUAL_GPUS"] = str(args.virtual_gpus)
    stop = stop_on_signal_or_owner_exit()
    from tfteach.distributed.service.grpc_server import (
        Server,  # after the signal handlers: a quick ^C still exits 0
    )

    try:
        server = Server(load_cluster(args.cluster, jobs), job_name=args.job,
                        task_index=args.task, insecure=args.insecure, engine_factory=args.engine)
    except Exception as exc:  # noqa: BLE001 - any failure to start: report it, exit 1
        logging.getLogger("tfteach.distributed").error("Cannot start server: %s", exc)
        return 1
    if server.bulk_port:
        from tfteach.distributed.protocol import tflog
        from tfteach.i18n import tr
        tflog.info(tr("Large tensors for other hosts leave on TCP port {port} (where a "
                      "firewall blocks it, they take the cluster port)", port=server.bulk_port))
    while not stop.wait(0.5):
        pass
    _exit_if_stuck(EXIT_GRACE_S)
    server.stop()
    return 0


def stop_on_signal_or_owner_exit() -> StopFlag:
    """A StopFlag set by SIGINT/SIGTERM and, for a task started by an owner that set
    ``TFTEACH_PARENT_PID``, when that owner dies (also the TensorFlow tasks' stop)."""
    stop = StopFlag()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop.on_signal)
    _watch_parent(stop)
    return stop


class StopFlag:
    """When the task must stop: set by SIGINT/SIGTERM (``on_signal``) or by the parent
    watch (``set``); the main thread polls it with ``wait``.

    A signal handler runs in the main thread between any two bytecodes, also inside
    ``Event.wait`` while that holds the event's lock; a handler that set the Event would
    then wait for that lock forever (a task once hung so, its owner dead, under load). So
    ``on_signal`` takes no lock: it sets an attribute that ``wait`` checks."""

    def __init__(self) -> None:
        self.signalled = False
        self._event = threading.Event()

    def on_signal(self, *_: Any) -> None:
        self.signalled = True

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self.signalled or self._event.is_set()

    def wait(self, timeout: float) -> bool:
        """Whether to stop, after waiting at most ``timeout`` s for ``set``."""
        return self.signalled or self._event.wait(timeout) or self.signalled


def _exit_if_stuck(grace: float) -> None:
    """Leave the process after ``grace`` s even if stopping hangs (an RPC thread that does
    not end, a thread the interpreter would join at exit): a task told to stop must go."""
    def leave() -> None:
        logging.getLogger("tfteach.distributed").warning(
            "Server did not stop within %g s; exiting anyway", grace)
        logging.shutdown()
        os._exit(0)
    timer = threading.Timer(grace, leave)
    timer.daemon = True
    timer.start()


def _watch_parent(stop: StopFlag) -> None:
    """Exit (via ``stop``) when the owner that started this task (``TFTEACH_PARENT_PID``)
    dies. If the owner is our direct parent, Linux also signals us (PR_SET_PDEATHSIG); a
    task restarted by someone else (the JupyterLab extension) relies on the polling thread."""
    parent = os.environ.get(PARENT_PID_ENV)
    if not parent or not parent.isdigit():
        return
    from tfteach.distributed.transport.processes import pid_alive

    owner = int(parent)
    if os.getppid() == owner:
        _set_parent_death_signal()

    def watch() -> None:
        while not stop.wait(0.5):
            if not pid_alive(owner):
                stop.set()
    threading.Thread(target=watch, name="tfteach-parent-watch", daemon=True).start()
    if not pid_alive(owner):            # the owner died before we got here
        stop.set()


def _set_parent_death_signal() -> None:
    """Linux: get SIGTERM when the parent (thread) dies, via prctl(PR_SET_PDEATHSIG)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)      # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


if __name__ == "__main__":
    sys.exit(main())
