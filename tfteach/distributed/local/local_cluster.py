"""``LocalCluster``: a real multi-process cluster on loopback, for notebooks and tests.

``LocalCluster(ps=1, workers=2)`` starts every task as ``python -m tfteach.server`` in its
own process group on a free loopback port, with a fresh random token in its environment,
and returns once all answer GetStatus. Tasks exit when their owner dies (parent pid in
``TFTEACH_PARENT_PID``: prctl PDEATHSIG plus a polling thread) and when ``close()`` runs
(also at interpreter exit). State: the registry entry (see ``registry``: the source of truth
for task pids), a temp dir with ``cluster.json`` and one log file per task.
Invariants: the token is never in argv, a repr or a log; after ``kill``/``close`` no
``/dev/shm`` segment of a dead task remains.

``backend="tensorflow"`` starts real ``tf.train.Server`` processes instead (TensorFlow's
compat.v1 runtime; see ``tf_task``), with the same spec, targets, logs, kill, restart, close
and registry entry (its ``backend`` says which runtime runs the tasks).
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any, Sequence

from tfteach.distributed.client import lifetime
from tfteach.distributed.local import task_registry as registry
from tfteach.distributed.local import tf_task
from tfteach.distributed.protocol.cluster_spec import ClusterSpec
from tfteach.distributed.transport import shm

STARTUP_TIMEOUT_S = 60.0


class LocalCluster:
    """A cluster of ``ps`` parameter servers and ``workers`` workers on this machine.

    ``gpus_per_task`` and ``worker_speeds[i]`` reach each task's engine as
    ``TFTEACH_VIRTUAL_GPUS`` / ``TFTEACH_DEVICE_SPEED``; ``engine`` (``"module:attr"``) as
    ``TFTEACH_ENGINE``.

    ``network`` models the network between the tasks, as if each ran on a host of its own:
    a ``tfteach.hardware`` profile's name (its link between hosts), a link's name
    ("1 Gbit Ethernet", "10 Gbit Ethernet", ...), a ``MachineProfile`` or ``LinkProfile``.
    Every tensor one task reads from another then arrives when a transfer of its size over
    that link would end (``latency + bytes / bandwidth``, queued behind other transfers
    through either task's port; see ``modelled_network``), so a step's transfer times show
    what a slow network costs. ``cluster.network`` is the link (None: loopback only),
    ``cluster.network_ledger`` when each task's ports are next free
    (``tfteach.hardware.network.LinkLedger``).

    ``backend="tensorflow"`` runs each task as a real TensorFlow server
    (``tf.train.Server``, one process per task; TensorFlow must be installed:
    ``pip install "tfteach[conformance]"``), so lessons 7-12 can run on TF's own distributed
    runtime. Its tasks speak TF's protocol only, so the learner's code must then be real
    TensorFlow too::

        import tensorflow.compat.v1 as tf
        tf.disable_v2_behavior()
        cluster = LocalCluster(ps=1, workers=2, backend="tensorflow")
        spec = tf.train.ClusterSpec(cluster.spec.as_dict())
        with tf.Session(cluster.target("worker", 0)) as sess: ...

    A tfteach ``Session`` aimed at such a task from this process raises UnimplementedError
    with a hint (from another process it fails on TF's answer instead). TF's servers have
    no cluster token, virtual GPUs, device speeds or step counter: ``gpus_per_task``,
    ``worker_speeds`` and ``engine`` are tfteach's only, and the status shows no last step.
    The tasks' logs hold TensorFlow's own output (``TF_CPP_MIN_LOG_LEVEL=1`` quiets it).

    A class that outgrows one machine moves to TF's engine, not to tfteach's: make a
    TensorFlow copy of the capstone's program (lesson 12) by changing its import line, and
    start one task per machine with the same hosts (README.md, "Several machines on real
    TensorFlow")::

        src=$(python -c 'import tfteach.examples.distributed_digits as m; print(m.__file__)')
        tf1='import tensorflow.compat.v1 as tf; tf.disable_v2_behavior()'
        sed "s/^import tfteach as tf$/$tf1/" "$src" > digits_tf.py    # on every machine
        python digits_tf.py --ps_hosts=a:2222 --worker_hosts=b:2222,c:2222 \\
            --job_name=ps --task_index=0                    # on a; on b and c: worker 0, 1

    On one machine, ``--master cluster.target("worker", i)`` runs a worker's client of that
    copy against this cluster's TF servers instead of starting its own.
    """

    def __init__(self, ps: int = 1, workers: int = 2, gpus_per_task: int = 0,
                 worker_speeds: Sequence[float] | None = None, *, engine: str | None = None,
                 startup_timeout: float = STARTUP_TIMEOUT_S, backend: str = "tfteach",
                 network: Any = None) -> None:
        _check_sizes(ps, workers, worker_speeds)
        _check_backend(backend, gpus_per_task, worker_speeds, engine or network)
        self.backend = backend
        self.network = _network_link(network)
        self.network_ledger: Any = None
        self._dir = Path(tempfile.mkdtemp(prefix="tfteach-cluster-"))
        self._token = secrets.token_urlsafe(32)
        self.id = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._logs_at_close: dict[tuple[str, int], str] | None = None
        self._entry = self._make_entry(ps, workers, gpus_per_task, worker_speeds, engine)
        self._model_network()
        self._closer = weakref.finalize(self, _close_quietly, self.id, self._dir)
        lifetime.closing(self, LocalCluster.close, "cluster")
        shm.sweep_dead()            # what earlier, killed clusters left behind
        for record in self._entry["tasks"]:
            self._introduce(record, True)       # to sessions of this process
            record["pid"] = registry.spawn_task(self._entry, record)
        registry.write_entry(self._entry)
        try:
            registry.wait_ready(self._entry, self._entry["tasks"], startup_timeout)
        except BaseException:
            self.close()
            raise

    def _make_entry(self, ps: int, workers: int, gpus: int, speeds: Sequence[float] | None,
                    engine: str | None) -> dict[str, Any]:
        from tfteach.distributed.transport import processes

        ports = iter(processes.free_ports(ps + workers))
        jobs = {job: [f"localhost:{next(ports)}" for _ in range(count)]
                for job, count in (("ps", ps), ("worker", workers)) if count}
        (self._dir / "cluster.json").write_text(json.dumps({"cluster": jobs}))
        tasks = [self._task_record(job, index, address, gpus, speeds, engine)
                 for job, addresses in jobs.items() for index, address in enumerate(addresses)]
        return {"id": self.id, "owner_pid": os.getpid(), "owner_uid": os.getuid(),
                "created": time.time(), "backend": self.backend, "token": self._token,
                "tasks": tasks}

    def _task_record(self, job: str, index: int, address: str, gpus: int,
                     speeds: Sequence[float] | None, engine: str | None) -> dict[str, Any]:
        env = {"TFTEACH_VIRTUAL_GPUS": str(gpus), "PYTHONPATH": _pythonpath()}
        if speeds is not None and job == "worker":
            env["TFTEACH_DEVICE_SPEED"] = repr(float(speeds[index]))
        if engine:
            env["TFTEACH_ENGINE"] = engine
        argv = [sys.executable, "-m", "tfteach.server", "--cluster",
                str(self._dir / "cluster.json"), "--job", job, "--task", str(index)]
        if self.backend == tf_task.TENSORFLOW:
            argv = tf_task.task_argv(str(self._dir / "cluster.json"), job, index)
        return {"job": job, "task": index, "address": address, "pid": 0, "argv": argv,
                "env": env, "log": str(self._dir / f"{job}-{index}.log")}

    def _model_network(self) -> None:
        """Give every task the modelled link and one shared ledger of its ports."""
        if self.network is None:
            return
        from tfteach.distributed.contract import modelled_network
        from tfteach.hardware.network import LinkLedger

        tasks = [f"/job:{r['job']}/replica:0/task:{r['task']}" for r in self._entry["tasks"]]
        ledger = str(self._dir / "network.ledger")
        self.network_ledger = LinkLedger.create(ledger, tasks, self.network)
        value = modelled_network.task_env(self.network, ledger, tasks)
        for record in self._entry["tasks"]:
            record["env"][modelled_network.ENV] = value
        self._entry["network"] = self.network.name

    def _introduce(self, record: dict[str, Any], running: bool) -> None:
        """Tell sessions of this process about a task: its token (tfteach), or that it
        runs TensorFlow's server, which they must not call (``running=False``: forget)."""
        from tfteach.distributed.client import remote_session

        if self.backend == tf_task.TENSORFLOW:
            what = f"/job:{record['job']}/task:{record['task']} of LocalCluster {self.id}"
            remote_session.remember_tensorflow_task(record["address"], what if running else None)
        elif running:
            remote_session.remember_token(record["address"], self._token)

    # -- inspection -----------------------------------------------------------
    def __repr__(self) -> str:
        jobs = self.spec.as_dict() if self._entry else {}
        state = "closed" if self._logs_at_close is not None else \
            f"{sum(self._alive(r) for r in self._entry['tasks'])}/{len(self._entry['tasks'])} alive"
        backend = f", backend={self.backend!r}" if self.backend != "tfteach" else ""
        network = f", network={self.network.name!r}" if self.network is not None else ""
        return f"LocalCluster(id={self.id!r}, jobs={jobs}{backend}{network}, {state})"

    @property
    def spec(self) -> ClusterSpec:
        """The ClusterSpec of the running tasks (``localhost:<port>`` addresses)."""
        jobs: dict[str, list[str]] = {}
        for record in self._entry["tasks"]:
            jobs.setdefault(record["job"], []).append(record["address"])
        return ClusterSpec(jobs)

    @property
    def token(self) -> str:
        """The cluster token (a secret: do not print it)."""
        return self._token

    def target(self, job: str = "worker", task: int = 0) -> str:
        """``grpc://localhost:<port>`` of a task, for ``Session(target)``."""
        return f"grpc://{self._record(job, task)['address']}"

    def alive(self, job: str, task: int) -> bool:
        """Whether the task's process is running."""
        return self._alive(self._record(job, task))

    def logs(self, job: str, task: int) -> str:
        """Everything the task wrote to stdout and stderr."""
        if self._logs_at_close is not None:
            return self._logs_at_close.get((job, int(task)), "")
        try:
            return Path(self._record(job, task)["log"]).read_text(errors="replace")
        except OSError:
            return ""

    # -- control ----------------------------------------------------------------
    def kill(self, job: str, task: int) -> None:
        """SIGKILL a task (as a crash would); its shared memory is swept."""
        self._record(job, task)
        registry.kill_task(self.id, job, task)

    def restart(self, job: str, task: int, timeout: float = STARTUP_TIMEOUT_S) -> None:
        """Start a task again on the same port (killing it first if alive)."""
        self._record(job, task)
        registry.restart_task(self.id, job, task, timeout)

    def close(self) -> None:
        """Stop every task, delete the registry entry and the temp dir (logs are kept)."""
        if self._logs_at_close is not None:
            return
        self._logs_at_close = {}
        self._closer.detach()
        lifetime.forget(self)
        _close_quietly(self.id, None)
        self._logs_at_close = {(r["job"], r["task"]): _read(r["log"])
                               for r in self._entry["tasks"]}
        for record in self._entry["tasks"]:
            self._introduce(record, False)
        if self.network_ledger is not None:
            self.network_ledger.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _record(self, job: str, task: int) -> dict[str, Any]:
        if self._logs_at_close is None:
            try:
                self._entry = registry.read_entry(self.id)
            except Exception:  # noqa: BLE001 - the entry was removed: keep the last view
                pass
        return registry.find_task(self._entry, job, task)

    def _alive(self, record: dict[str, Any]) -> bool:
        return self._logs_at_close is None and registry.task_pid(record) is not None


def _close_quietly(cluster_id: str, directory: Path | None) -> None:
    from tfteach import errors

    try:
        registry.stop_cluster(cluster_id)
    except errors.NotFoundError:
        pass
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _pythonpath() -> str:
    """PYTHONPATH that lets a task import this very tfteach package."""
    root = str(Path(__file__).resolve().parents[3])
    rest = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([root] + ([rest] if rest else []))


def _network_link(network: Any) -> Any:
    """The modelled link ``network`` names (None: none)."""
    if network is None:
        return None
    from tfteach.hardware.network import network_link

    return network_link(network)


def _check_backend(backend: str, gpus: int, speeds: Sequence[float] | None,
                   engine: Any) -> None:
    if backend not in ("tfteach", tf_task.TENSORFLOW):
        raise ValueError(f"backend must be 'tfteach' or 'tensorflow', not {backend!r}")
    if backend == tf_task.TENSORFLOW:
        if gpus or speeds is not None or engine:
            raise ValueError("gpus_per_task, worker_speeds, engine and network set tfteach's "
                             "engine; TensorFlow's servers use this machine's real devices "
                             "and network. Leave them out with backend='tensorflow'.")
        tf_task.require_tensorflow("LocalCluster(backend='tensorflow')")


def _check_sizes(ps: int, workers: int, worker_speeds: Sequence[float] | None) -> None:
    if ps < 0 or workers < 0 or ps + workers == 0:
        raise ValueError(f"A LocalCluster needs at least one task (got ps={ps}, "
                         f"workers={workers})")
    if worker_speeds is not None and len(worker_speeds) != workers:
        raise ValueError(f"worker_speeds has {len(worker_speeds)} entries for {workers} "
                         "workers; give one speed per worker")
