"""The registry of live LocalClusters, shared with the JupyterLab server extension.

Each LocalCluster writes ``<registry dir>/<cluster_id>.json`` (dir 0700, file 0600):
``{id, owner_pid, owner_uid, created, backend, token, tasks: [{job, task, address, pid, argv,
env, log}], network}``, where ``backend`` is ``"tfteach"`` or ``"tensorflow"`` (TF's own
servers, see ``tf_task``; an entry without it is tfteach's), ``network`` (only on a
modelled network, ``LocalCluster(network=...)``) names the link between the tasks, ``env``
holds the task's non-secret ``TFTEACH_*`` settings and ``log`` its output file. Tasks start
with the owner's environment, their ``env``, the token, a short OpenBLAS spin
(``BLAS_SPIN``) and their share of this machine's cores as BLAS threads (``blas_threads``).
The registry dir is ``$TFTEACH_REGISTRY_DIR``, else ``<jupyter runtime dir>/tfteach-clusters``.
The file is the source of truth for task pids, so a task restarted by the extension is seen
by its LocalCluster and the other way round.

Functions for the extension: ``list_clusters()`` (public entries, token removed; entries of
dead owners are deleted), ``task_health``, ``kill_task``, ``restart_task``, ``stop_cluster``.
Invariants: the token is only in the 0600 file and in task environments, never in argv,
return values of ``list_clusters`` or logs; files are replaced atomically.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from tfteach import errors
from tfteach.distributed.transport import processes, shm
from tfteach.distributed.transport.security import TOKEN_ENV
from tfteach.i18n import tr

REGISTRY_ENV = "TFTEACH_REGISTRY_DIR"
PARENT_PID_ENV = "TFTEACH_PARENT_PID"
# A cluster's tasks share this machine's cores: OpenBLAS threads that spin for up to 2^28
# cycles after each call (its default) take a core from the other tasks. 2^4 cycles: they
# sleep at once (a 784x10 softmax step on 1 ps + 1 worker, 2 cores: 7.3 -> 5.9 ms).
# An OPENBLAS_THREAD_TIMEOUT in the environment wins.
BLAS_SPIN = "4"
# Tasks share the cores too: each task's BLAS gets its share of them (at least one thread).
# Waking a second OpenBLAS thread for a small matmul costs more than the matmul when other
# tasks hold the cores (784x10 softmax step, 1 ps + 2 workers on 2 cores: 4.75 -> 4.43 ms).
BLAS_THREAD_ENVS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def registry_dir() -> Path:
    """The registry directory (created with mode 0700)."""
    override = os.environ.get(REGISTRY_ENV)
    if override:
        path = Path(override)
    else:
        path = _jupyter_runtime_dir() / "tfteach-clusters"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def _jupyter_runtime_dir() -> Path:
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:
        return Path.home() / ".local" / "share" / "jupyter" / "runtime"
    return Path(jupyter_runtime_dir())


def write_entry(entry: dict[str, Any]) -> Path:
    """Create or replace a cluster's file (0600, atomically)."""
    path = registry_dir() / f"{entry['id']}.json"
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(entry, handle, indent=1)
    os.replace(tmp, path)
    return path


def read_entry(cluster_id: str) -> dict[str, Any]:
    """A cluster's entry, token included (NotFoundError if there is none)."""
    path = registry_dir() / f"{os.path.basename(cluster_id)}.json"
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        raise errors.NotFoundError(
            f"No running LocalCluster with id {cluster_id!r}",
            hint=tr("It may have been closed, or its notebook kernel stopped.")) from None


def remove_entry(cluster_id: str) -> None:
    """Delete a cluster's file (no error if it is gone)."""
    try:
        (registry_dir() / f"{os.path.basename(cluster_id)}.json").unlink()
    except FileNotFoundError:
        pass


def find_task(entry: dict[str, Any], job: str, task: int) -> dict[str, Any]:
    """The task record of ``/job:job/task:task`` in ``entry``."""
    for record in entry["tasks"]:
        if record["job"] == job and record["task"] == int(task):
            return record
    tasks = [(record["job"], record["task"]) for record in entry["tasks"]]
    raise errors.NotFoundError(f"Cluster {entry['id']} has no task /job:{job}/task:{task}",
                               hint=tr("Its tasks are {tasks}.", tasks=tasks))


def list_clusters() -> list[dict[str, Any]]:
    """Entries of live clusters, without their tokens; deletes entries of dead owners."""
    clusters = []
    for path in sorted(registry_dir().glob("*.json")):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not processes.pid_alive(int(entry.get("owner_pid", 0))):
            _forget_dead_cluster(entry)
            continue
        clusters.append(public_entry(entry))
    return clusters


def public_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` without its token (what may be shown or sent to a browser)."""
    return {key: value for key, value in entry.items() if key != "token"}


def task_health(cluster: str | dict[str, Any], job: str, task: int,
                timeout: float = 1.0) -> dict[str, Any]:
    """``{"alive", "devices", "last_step"}`` of a task, asked over gRPC (tfteach's GetStatus
    with the token; TF's GetStatus for a TensorFlow task, which reports no step)."""
    entry = read_entry(cluster if isinstance(cluster, str) else cluster["id"])
    record = find_task(entry, job, task)
    health = {"alive": False, "devices": [], "last_step": None}
    if task_pid(record) is None:
        return health
    name = _name(record)
    with _prober(entry) as probe:
        try:
            status = probe({name: record["address"]}, timeout).get(name)
        except errors.OpError:
            status = None
    if status is None:
        return health
    return {"alive": True, "devices": status["devices"], "last_step": status["last_step"]}


def kill_task(cluster_id: str, job: str, task: int) -> None:
    """SIGKILL a task's process group and remove the shared memory it leaves behind."""
    _kill_record(find_task(read_entry(cluster_id), job, task))


def restart_task(cluster_id: str, job: str, task: int, timeout: float = 30.0) -> int:
    """Kill (if alive) and start again a task on the same port; wait until it answers.
    Returns the new pid."""
    entry = read_entry(cluster_id)
    record = find_task(entry, job, task)
    _kill_record(record)
    record["pid"] = spawn_task(entry, record)
    write_entry(entry)
    wait_ready(entry, [record], timeout)
    return record["pid"]


def stop_cluster(cluster_id: str, grace: float = 3.0) -> None:
    """Stop every task of a cluster (SIGTERM, then SIGKILL) and delete its entry."""
    entry = read_entry(cluster_id)
    pids = [task_pid(record) for record in entry["tasks"]]
    processes.terminate([pid for pid in pids if pid], grace)
    shm.sweep_dead()
    remove_entry(cluster_id)


def _kill_record(record: dict[str, Any]) -> None:
    pid = task_pid(record)
    if pid:
        processes.kill(pid)
    shm.sweep_dead()


def blas_threads(tasks: int) -> int:
    """BLAS threads for each of ``tasks`` tasks on this machine: their share of its cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // max(1, tasks))


def spawn_task(entry: dict[str, Any], record: dict[str, Any]) -> int:
    """Start the process of task ``record`` of cluster ``entry``; return its pid."""
    env = dict(os.environ)
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", BLAS_SPIN)
    if not any(name in env for name in BLAS_THREAD_ENVS):
        env.update(dict.fromkeys(BLAS_THREAD_ENVS, str(blas_threads(len(entry["tasks"])))))
    env.update(record.get("env", {}))
    env.update({TOKEN_ENV: entry["token"], PARENT_PID_ENV: str(entry["owner_pid"]),
                "GRPC_VERBOSITY": env.get("GRPC_VERBOSITY", "ERROR"), "PYTHONUNBUFFERED": "1"})
    return processes.spawn(record["argv"], env, record["log"])


def wait_ready(entry: dict[str, Any], records: list[dict[str, Any]], timeout: float) -> None:
    """Wait until every task in ``records`` answers GetStatus; raise UnavailableError with
    the task's log tail if one exits or ``timeout`` s pass."""
    pending = {_name(r): r for r in records}
    deadline = time.monotonic() + timeout
    with _prober(entry) as probe:
        while pending:
            for name, record in list(pending.items()):
                if task_pid(record) is None:
                    raise _start_failed(name, record, "exited")
            if time.monotonic() > deadline:
                name, record = next(iter(pending.items()))
                raise _start_failed(name, record, f"did not answer in {timeout:g} s")
            answers = probe({n: r["address"] for n, r in pending.items()}, 0.1)
            for name in answers:
                del pending[name]


def backend(entry: dict[str, Any]) -> str:
    """The runtime of a cluster's tasks: ``"tfteach"`` or ``"tensorflow"``."""
    return str(entry.get("backend", "tfteach"))


@contextlib.contextmanager
def _prober(entry: dict[str, Any]) -> Iterator[Callable[[dict[str, str], float], dict]]:
    """``probe({task_name: address}, timeout)`` -> ``{task_name: {"devices", "last_step"}}``
    of the tasks that answered GetStatus, for the cluster's backend."""
    from tfteach.distributed.client.client import ClusterClient
    from tfteach.distributed.client.waiting import probe_tasks
    from tfteach.distributed.local import tf_task

    if backend(entry) == tf_task.TENSORFLOW:
        client: Any = tf_task.StatusClient()

        def probe(targets: dict[str, str], timeout: float) -> dict:
            return {name: {"devices": devices, "last_step": None}
                    for name, devices in client.probe_tasks(targets, timeout).items()}
    else:
        client = ClusterClient(entry["token"], status_only=True)   # no mallopt in Jupyter
        probe = functools.partial(probe_tasks, client)
    try:
        yield probe
    finally:
        client.close()


def log_tail(record: dict[str, Any], lines: int = 20) -> str:
    """The last ``lines`` lines of a task's output."""
    try:
        text = Path(record["log"]).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _name(record: dict[str, Any]) -> str:
    return f"/job:{record['job']}/replica:0/task:{record['task']}"


def _start_failed(name: str, record: dict[str, Any], what: str) -> errors.OpError:
    return errors.UnavailableError(
        f"Task {name} ({record['address']}) {what} while starting. Its output:\n"
        f"{log_tail(record)}",
        hint=tr("Read the task's output above; a port taken by another program or a broken "
                "environment are the usual causes."))


def _forget_dead_cluster(entry: dict[str, Any]) -> None:
    # The tasks exit by themselves when their owner dies (parent watch); never signal
    # their pids here: they may belong to other processes by now.
    shm.sweep_dead()
    remove_entry(str(entry.get("id", "")))


def task_pid(record: dict[str, Any]) -> int | None:
    """The pid of a task's process if it is alive and still runs that task's argv."""
    pid = record.get("pid")
    if not pid or not processes.pid_alive(pid):
        return None
    return pid if processes.runs(pid, record["argv"]) else None
