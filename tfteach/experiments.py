"""Experiments on a real local cluster, returned as plain data for plots and tests.

``sync_vs_async(...)`` trains the same softmax regression on the handwritten digits (the
``tfteach.examples.distributed_digits`` program) on a ``LocalCluster`` twice: with
``SyncReplicasOptimizer`` and asynchronously. Every worker has its own client (a thread of
this process, or a subprocess) with its own graph and session, as in between-graph
replication. The result::

    {"sync": [record, ...], "async": [record, ...],        # sorted by wall_time
     "accuracy": {"sync": 0.93, "async": 0.92},           # test accuracy at the end
     "global_step": {...}, "wall_time": {...}, "steps_per_second": {...},
     "killed": {mode: {"worker", "at_global_step", "wall_time"} or None},
     "errors": {mode: [message, ...]}, "config": {...}}

A record (one per step of one worker): ``worker``, ``step`` (its own count), ``global_step``
(after the step), ``wall_time`` (seconds since the run started), ``loss``, ``staleness``
(async: how many updates of other workers landed between this step's read of the
parameters and its own update; None in sync) and ``accepted`` (sync: False when the
gradient came too late and was dropped as stale; None in async).

Clients in threads start stepping together: each waits, once its training session exists,
for the others' (a non-chief's session waits for the chief's initialisation, polling every
half second, and an async chief would otherwise train alone meanwhile). So both ways, every
worker, a straggler too, takes part from the first global step.

State: none between calls (a LocalCluster passed in is reset before each run).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tfteach as tf
from tfteach.errors import with_hint
from tfteach.i18n import tr
from tfteach.examples import distributed_digits as program

MODES = ("sync", "async")


class InProcessCluster:
    """``ps`` and ``workers`` tasks as Servers inside this process, on free loopback ports.

    Faster to start than a LocalCluster (no subprocesses) and just as real over gRPC, but a
    task cannot be killed (``stop`` it instead) and all tasks share this process's CPU.
    """

    def __init__(self, ps: int = 1, workers: int = 2, gpus_per_task: int = 0) -> None:
        from tfteach.distributed.protocol.cluster_spec import ClusterSpec
        from tfteach.distributed.engine.graph_engine import GraphEngine
        from tfteach.distributed.transport.processes import free_ports
        from tfteach.distributed.service.grpc_server import Server
        ports = iter(free_ports(ps + workers))
        jobs = {job: [f"localhost:{next(ports)}" for _ in range(n)]
                for job, n in (("ps", ps), ("worker", workers)) if n}
        self.spec = ClusterSpec(jobs)
        config = tf.ConfigProto(device_count={"GPU": gpus_per_task})
        self.servers = {(job, i): Server(self.spec, job_name=job, task_index=i, config=config,
                                         engine_factory=GraphEngine)
                        for job, addresses in jobs.items() for i in range(len(addresses))}

    def target(self, job: str = "worker", task: int = 0) -> str:
        return self.servers[job, task].target

    def stop(self, job: str, task: int) -> None:
        """Stop one task (its port closes, as when a machine goes away)."""
        self.servers[job, task].stop()

    def close(self) -> None:
        for server in self.servers.values():
            server.stop()

    def __enter__(self) -> InProcessCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sync_vs_async(workers: int = 2, ps: int = 1, worker_speeds: Sequence[float] | None = None,
                  backup_workers: int = 0, steps: int = 200, seed: int = 0,
                  batch_size: int = 32, learning_rate: float = 1.0, clients: str = "threads",
                  modes: Sequence[str] = MODES, kill_worker: tuple[int, int] | None = None,
                  cluster: Any = None, timeout_s: float = 300.0) -> dict:
    """Train to global step ``steps`` each way; see the module docstring for the result.

    ``worker_speeds[i] < 1`` slows worker i's devices (a straggler). ``backup_workers`` (sync)
    lets each step go ahead with the first ``workers - backup_workers`` gradients.
    ``kill_worker=(i, n)`` kills worker i (its task and its client, which then runs in a
    process) once the global step reaches n and worker i has done a step. ``clients`` is
    "threads" or "processes".
    """
    _check(workers, backup_workers, clients, modes, kill_worker)
    run = _Run(workers, ps, backup_workers, steps, seed, batch_size, learning_rate, clients,
               kill_worker, timeout_s)
    own = cluster is None
    cluster = cluster or _start_cluster(ps, workers, worker_speeds)
    try:
        result = _empty_result(run, worker_speeds)
        for mode in modes:
            run.one_mode(cluster, mode, result)
        return result
    finally:
        if own:
            cluster.close()


def _check(workers: int, backup: int, clients: str, modes: Sequence[str],
           kill: tuple | None) -> None:
    if not 0 <= backup < workers:
        raise ValueError(with_hint(
            f"backup_workers must be between 0 and workers - 1 = {workers - 1}, got {backup}.",
            tr("sync needs at least one worker that is not a backup.")))
    if clients not in ("threads", "processes"):
        raise ValueError(f"clients must be 'threads' or 'processes', got {clients!r}")
    if set(modes) - set(MODES):
        raise ValueError(f"modes must be among {MODES}, got {list(modes)}")
    if kill is not None and not 0 < kill[0] < workers:
        raise ValueError(with_hint(
            f"kill_worker=({kill[0]}, ...) must name a worker from 1 to {workers - 1}.",
            tr("worker 0 is the chief, which initializes and checkpoints; kill another one.")))


def _start_cluster(ps: int, workers: int, speeds: Sequence[float] | None) -> Any:
    from tfteach.distributed.local.local_cluster import LocalCluster
    return LocalCluster(ps=ps, workers=workers, worker_speeds=speeds,
                        engine=program.GRAPH_ENGINE)


def _empty_result(run: _Run, speeds: Sequence[float] | None) -> dict:
    config = {"workers": run.workers, "ps": run.ps, "worker_speeds": list(speeds or []),
              "backup_workers": run.backup, "steps": run.steps, "seed": run.seed,
              "batch_size": run.batch_size, "learning_rate": run.learning_rate,
              "clients": run.clients, "kill_worker": run.kill}
    keys = ("accuracy", "global_step", "wall_time", "steps_per_second", "killed", "errors")
    return {"config": config, **{k: {} for k in keys}}


class _Run:
    """One experiment's settings, and how to run one mode of it."""

    def __init__(self, workers: int, ps: int, backup: int, steps: int, seed: int,
                 batch_size: int, learning_rate: float, clients: str, kill: tuple | None,
                 timeout_s: float) -> None:
        self.workers, self.ps, self.backup, self.steps = workers, ps, backup, steps
        self.seed, self.batch_size, self.learning_rate = seed, batch_size, learning_rate
        self.clients, self.kill, self.timeout_s = clients, kill, timeout_s

    def one_mode(self, cluster: Any, mode: str, result: dict) -> None:
        _fresh_state(cluster, self.workers)
        sync = mode == "sync"
        clients = self._start_clients(cluster, sync)
        t0 = time.time()
        for c in clients:
            c.go(t0)
        killed = self._kill_when_due(cluster, clients, t0)
        records, errors = _collect(clients, t0 + self.timeout_s)
        result["wall_time"][mode] = time.time() - t0
        records.sort(key=lambda r: r["wall_time"])
        result[mode] = records
        result["killed"][mode] = killed
        result["errors"][mode] = errors
        step = max([r["global_step"] for r in records], default=0)
        result["global_step"][mode] = step
        result["steps_per_second"][mode] = step / max(result["wall_time"][mode], 1e-9)
        result["accuracy"][mode] = self._accuracy(cluster, sync)

    def _start_clients(self, cluster: Any, sync: bool) -> list:
        """Every client, built and waiting for ``go`` (processes take a while to start)."""
        in_process = [not (self.clients == "processes" or (self.kill is not None and
                                                           self.kill[0] == i))
                      for i in range(self.workers)]
        start = threading.Barrier(self.workers, timeout=self.timeout_s) if all(in_process) \
            else None
        clients = [_ThreadClient(self, cluster, i, sync, start) if threaded
                   else _ProcessClient(self, cluster, i, sync)
                   for i, threaded in enumerate(in_process)]
        deadline = time.monotonic() + self.timeout_s
        while not all(c.ready() for c in clients) and time.monotonic() < deadline:
            time.sleep(0.02)
        return clients

    def _kill_when_due(self, cluster: Any, clients: list, t0: float) -> dict | None:
        if self.kill is None:
            return None
        index, at_step = self.kill
        deadline = t0 + self.timeout_s
        while time.time() < deadline and not all(c.done() for c in clients):
            seen = max([c.last_global_step() for c in clients], default=0)
            if seen >= at_step and clients[index].records():   # it has taken part
                seen = max([c.last_global_step() for c in clients], default=0)
                cluster.kill("worker", index)
                clients[index].kill()
                return {"worker": index, "at_global_step": seen, "wall_time": time.time() - t0}
            time.sleep(0.05)
        return None

    def _accuracy(self, cluster: Any, sync: bool) -> float | None:
        model = program.build_model(cluster.spec, 0, sync, self.backup, self.learning_rate)
        try:
            return program.evaluate(cluster.target("worker", 0), model, self.seed)
        except tf.errors.OpError:
            return None


def _fresh_state(cluster: Any, workers: int) -> None:
    """Every worker task running, and no variables, queues or accumulators left over."""
    for i in range(workers):
        if not cluster.alive("worker", i):
            cluster.restart("worker", i)
    tf.Session.reset(cluster.target("worker", 0))


def _collect(clients: list, deadline: float) -> tuple[list, list]:
    records, errors = [], []
    for c in clients:
        c.wait(max(0.0, deadline - time.time()))
        records.extend(c.records())
        errors.extend(c.errors())
        c.close()
    return records, errors


class _Client:
    """One worker's training client."""

    def done(self) -> bool:
        raise NotImplementedError

    def last_global_step(self) -> int:
        recs = self.records()
        return recs[-1]["global_step"] if recs else 0

    def close(self) -> None:
        """Release what the client holds (its records file)."""

    def ready(self) -> bool:
        return True


class _StartTogetherHook(tf.train.SessionRunHook):
    """Once this worker's session exists, wait for every other worker's (a shared barrier)."""

    def __init__(self, barrier: threading.Barrier) -> None:
        self._barrier = barrier

    def after_create_session(self, session: Any, coord: Any) -> None:
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            pass                        # a client failed or timed out: start anyway


class _ThreadClient(_Client):
    """A worker client in a thread of this process (its own graph and session)."""

    def __init__(self, run: _Run, cluster: Any, i: int, sync: bool,
                 start: threading.Barrier | None = None) -> None:
        self._records: list = []
        self._errors: list = []
        self._args = (run, cluster, i, sync)
        self._start = start
        self._thread = threading.Thread(target=self._train, daemon=True,
                                        name=f"worker-{i}-client")

    def go(self, t0: float) -> None:
        self._t0 = t0
        self._thread.start()

    def _train(self) -> None:
        run, cluster, i, sync = self._args
        try:
            model = program.build_model(cluster.spec, i, sync, run.backup, run.learning_rate)
            if self._start is not None:
                model.extra_hooks.append(_StartTogetherHook(self._start))
            program.train_worker(cluster.target("worker", i), model, run.steps, run.batch_size,
                                 run.seed, on_step=self._records.append, t0=self._t0)
        except Exception as e:  # noqa: BLE001 (reported in the result)
            if self._start is not None:
                self._start.abort()         # the others must not wait for this one
            self._errors.append(f"worker {i}: {type(e).__name__}: {e}")

    def done(self) -> bool:
        return not self._thread.is_alive()

    def wait(self, timeout: float) -> None:
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._errors.append(f"{self._thread.name} did not finish in time")

    def kill(self) -> None:
        raise RuntimeError("a thread client cannot be killed")

    def records(self) -> list:
        return list(self._records)

    def errors(self) -> list:
        return list(self._errors)


class _ProcessClient(_Client):
    """A worker client in its own process (``python -m tfteach.examples.distributed_digits``)."""

    def __init__(self, run: _Run, cluster: Any, i: int, sync: bool) -> None:
        fd, path = tempfile.mkstemp(prefix=f"tfteach-worker{i}-", suffix=".jsonl")
        os.close(fd)
        self._path = Path(path)
        self._start = Path(path + ".start")
        self._killed = False
        self._i = i
        spec = cluster.spec.as_dict()
        argv = [sys.executable, "-m", "tfteach.examples.distributed_digits",
                "--ps_hosts", ",".join(spec["ps"]), "--worker_hosts", ",".join(spec["worker"]),
                "--job_name", "worker", "--task_index", str(i), "--master",
                cluster.target("worker", i), "--records", path, "--steps", str(run.steps),
                "--seed", str(run.seed), "--batch_size", str(run.batch_size),
                "--learning_rate", str(run.learning_rate), "--log_every", "0",
                "--start_file", str(self._start), "--no_eval"]
        if sync:
            argv += ["--sync", "--backup_workers", str(run.backup)]
        env = dict(os.environ, TFTEACH_CLUSTER_TOKEN=cluster.token,
                   PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1])] +
                                              [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self._proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True)

    def ready(self) -> bool:
        return Path(str(self._start) + ".ready").exists() or self.done()

    def go(self, t0: float) -> None:
        staging = Path(str(self._start) + ".tmp")
        staging.write_text(repr(t0))
        staging.rename(self._start)

    def done(self) -> bool:
        return self._proc.poll() is not None

    def wait(self, timeout: float) -> None:
        try:
            _, self._stderr = self._proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _, self._stderr = self._proc.communicate()
            self._stderr = f"worker {self._i} client did not finish in time\n" + self._stderr

    def kill(self) -> None:
        self._killed = True
        self._proc.kill()

    def records(self) -> list:
        try:
            lines = self._path.read_text().splitlines()
        except OSError:
            return []
        return [json.loads(line) for line in lines if line.endswith("}")]

    def close(self) -> None:
        for path in (self._path, self._start, Path(str(self._start) + ".ready")):
            path.unlink(missing_ok=True)

    def errors(self) -> list:
        if self._killed or self._proc.returncode == 0:
            return []
        tail = (getattr(self, "_stderr", "") or "").strip().splitlines()[-3:]
        return [f"worker {self._i} client exited with {self._proc.returncode}: " +
                " | ".join(tail)]
