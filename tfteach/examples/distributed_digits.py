"""The classic TF 1.x between-graph training program: softmax regression on the digits.

One process per task, as in the TF 1.x tutorials (between-graph replication)::

    python -m tfteach.examples.distributed_digits --ps_hosts=localhost:2222 \\
        --worker_hosts=localhost:2223,localhost:2224 --job_name=ps --task_index=0
    python -m tfteach.examples.distributed_digits ... --job_name=worker --task_index=0 --sync
    python -m tfteach.examples.distributed_digits ... --job_name=worker --task_index=1 --sync

A ps task serves its variables forever (``server.join()``). A worker builds the model with
``replica_device_setter`` (weights and global step on the ps tasks), shards the training
data by its task index, and trains with ``MonitoredTrainingSession`` until the global step
reaches ``--steps``: asynchronously (each worker applies its own gradients) or with
``--sync`` (``SyncReplicasOptimizer``; ``--backup_workers N`` lets each step go ahead
without the N slowest). Task 0 is the chief: it initializes (or restores from
``--checkpoint_dir``), and prints the test accuracy at the end.

``--master grpc://host:port`` runs only the client of a worker whose server already runs
(a LocalCluster task); ``--records FILE`` appends one JSON line per step (what
``tfteach.experiments`` collects). ``build_model`` and ``train_worker`` are the same code
as a library, used by ``tfteach.experiments`` with clients in threads.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import tfteach as tf
from tfteach.data import batches, load_digits, shard

GRAPH_ENGINE = "tfteach.distributed.engine.graph_engine:GraphEngine"


@dataclass
class Model:
    """The graph of one worker and the tensors its training loop uses."""

    graph: Any
    x: Any
    y: Any
    loss: Any
    accuracy: Any
    train_op: Any
    global_step: Any
    step_after: Any                 # the global step right after this step's update
    optimizer: Any
    sync: bool
    task_index: int
    num_workers: int
    extra_hooks: list = field(default_factory=list)


def _num_workers(cluster: Any) -> int:
    return len(cluster.as_dict()["worker"]) if hasattr(cluster, "as_dict") else \
        len(cluster["worker"])


def build_model(cluster: Any, task_index: int, sync: bool = False, backup_workers: int = 0,
                learning_rate: float = 1.0) -> Model:
    """Softmax regression 64 -> 10 in a new graph, variables on the ps tasks."""
    num_workers = _num_workers(cluster)
    g = tf.Graph()
    with g.as_default(), tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 64], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        w = tf.Variable(tf.zeros([64, 10]), name="weights")
        b = tf.Variable(tf.zeros([10]), name="biases")
        logits = tf.matmul(x, w) + b
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                            logits=logits))
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
        global_step = tf.train.get_or_create_global_step()
        opt = tf.train.GradientDescentOptimizer(learning_rate)
        if sync:
            opt = tf.train.SyncReplicasOptimizer(
                opt, replicas_to_aggregate=num_workers - backup_workers,
                total_num_replicas=num_workers)
        train_op = opt.minimize(loss, global_step=global_step)
        out = train_op if isinstance(train_op, tf.Tensor) else train_op.outputs[0]
        with tf.colocate_with(out.op.inputs[0].op):     # beside the (local) step variable
            step_after = tf.identity(out, name="step_after")
    hooks = [opt.make_session_run_hook(task_index == 0)] if sync else []
    if sync and task_index == 0:
        with g.as_default():
            hooks.append(ReleaseWorkersAtEndHook(opt.get_init_tokens_op(num_workers)))
    return Model(g, x, y, loss, accuracy, train_op, global_step, step_after, opt, sync,
                 task_index, num_workers, hooks)


class ReleaseWorkersAtEndHook(tf.train.SessionRunHook):
    """Sync only, on the chief: when training ends, hand every worker one more token.

    A worker can be waiting at the token barrier when the last global step is reached; the
    chief then stops making steps, so no token would ever come (in TF such workers hang
    until they are killed). One token each lets them finish that step and see the end.
    """

    def __init__(self, release_op: Any) -> None:
        self._release_op = release_op

    def end(self, session: Any) -> None:
        session.run(self._release_op)


def session_config(task_index: int) -> Any:
    """TF's advice for between-graph training: each worker sees only the ps and itself."""
    return tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{task_index}"])


def _endless_batches(x: np.ndarray, y: np.ndarray, batch_size: int,
                     seed: int) -> Iterator[tuple]:
    epoch = 0
    while True:
        yield from batches(x, y, batch_size, seed=seed * 1000 + epoch)
        epoch += 1


def worker_data(task_index: int, num_workers: int, seed: int = 0) -> tuple:
    """This worker's shard of the training data (pixels scaled to 0..1) and the test set."""
    (x_train, y_train), (x_test, y_test) = load_digits(seed=seed)
    xs, ys = shard(x_train / 16.0, y_train, num_workers, task_index)
    return (xs.astype(np.float32), ys), ((x_test / 16.0).astype(np.float32), y_test)


def train_worker(target: str, model: Model, steps: int, batch_size: int = 32, seed: int = 0,
                 checkpoint_dir: str | None = None, save_checkpoint_steps: int | None = None,
                 on_step: Callable[[dict], None] | None = None, t0: float | None = None,
                 stop_grace_period_secs: float = 5.0, config: Any = None) -> list[dict]:
    """Train until the global step reaches ``steps``; returns one record per local step.

    A record: worker, step (local), global_step (after this step), wall_time (seconds since
    ``t0``), loss, staleness (async: updates by others between this step's read of the
    parameters and its own update) and accepted (sync: False when dropped as stale).
    """
    (x, y), _ = worker_data(model.task_index, model.num_workers, seed)
    feed = _endless_batches(x, y, batch_size, seed + model.task_index)
    t0 = time.time() if t0 is None else t0
    records: list[dict] = []
    hooks = [tf.train.StopAtStepHook(last_step=steps)] + model.extra_hooks
    with model.graph.as_default(), tf.train.MonitoredTrainingSession(
            master=target, is_chief=model.task_index == 0, checkpoint_dir=checkpoint_dir,
            hooks=hooks, save_checkpoint_steps=save_checkpoint_steps,
            save_checkpoint_secs=None, stop_grace_period_secs=stop_grace_period_secs,
            config=config or session_config(model.task_index), log_step_count_steps=0) as sess:
        while not sess.should_stop():
            xb, yb = next(feed)
            record = _step(sess, model, xb, yb)
            record.update(worker=model.task_index, step=len(records) + 1,
                          wall_time=time.time() - t0)
            records.append(record)
            if on_step is not None:
                on_step(record)
    return records


def _step(sess: Any, model: Model, xb: np.ndarray, yb: np.ndarray) -> dict:
    fetches = {"after": model.step_after, "loss": model.loss}
    # tfteach's SyncReplicasOptimizer tells whether this worker's gradients counted; TF's
    # does not (the program's TensorFlow copy then records accepted=None)
    accepted = getattr(model.optimizer, "gradients_accepted", None) if model.sync else None
    if accepted is not None:
        fetches["accepted"] = accepted
    elif not model.sync:
        fetches["read"] = model.global_step
    out = sess.run(fetches, {model.x: xb, model.y: yb})
    record = {"global_step": int(out["after"]), "loss": float(out["loss"]),
              "staleness": None, "accepted": None}
    if accepted is not None:
        record["accepted"] = bool(np.all(out["accepted"]))
    elif not model.sync:
        record["staleness"] = int(out["after"]) - 1 - int(out["read"])
    return record


def evaluate(target: str, model: Model, seed: int = 0) -> float:
    """The accuracy of the current (ps) parameters on the test set."""
    _, (x_test, y_test) = worker_data(model.task_index, 1, seed)
    with tf.Session(target, graph=model.graph,
                    config=session_config(model.task_index)) as sess:
        return float(sess.run(model.accuracy, {model.x: x_test, model.y: y_test}))


# ---- the command line ---------------------------------------------------------------------------
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ps_hosts", required=True, help="comma-separated host:port of the ps tasks")
    p.add_argument("--worker_hosts", required=True, help="comma-separated host:port of workers")
    p.add_argument("--job_name", required=True, choices=["ps", "worker"])
    p.add_argument("--task_index", type=int, default=0)
    p.add_argument("--sync", action="store_true", help="synchronous training")
    p.add_argument("--backup_workers", type=int, default=0, help="sync: backup workers")
    p.add_argument("--steps", type=int, default=200, help="train until this global step")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint_dir", default=None)
    p.add_argument("--save_checkpoint_steps", type=int, default=None)
    p.add_argument("--master", default=None, help="use this task's running server")
    p.add_argument("--records", default=None, help="append one JSON line per step here")
    p.add_argument("--log_every", type=int, default=20)
    p.add_argument("--t0", type=float, default=None, help="wall_time 0 (seconds since epoch)")
    p.add_argument("--no_eval", action="store_true", help="skip the chief's test accuracy")
    p.add_argument("--start_file", default=None,
                   help="once ready, create FILE.ready and wait for FILE (holding t0)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cluster = tf.train.ClusterSpec({"ps": args.ps_hosts.split(","),
                                    "worker": args.worker_hosts.split(",")})
    target = args.master
    if target is None:
        server = tf.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
        if args.job_name == "ps":
            server.join()
            return 0
        target = server.target
    model = build_model(cluster, args.task_index, args.sync, args.backup_workers,
                        args.learning_rate)
    on_step = _printer(args)
    t0 = _wait_for_start(args.start_file) if args.start_file else args.t0
    records = train_worker(target, model, args.steps, args.batch_size, args.seed,
                           args.checkpoint_dir, args.save_checkpoint_steps, on_step=on_step, t0=t0)
    last = records[-1]["global_step"] if records else "not reached"
    print(f"worker {args.task_index}: done after {len(records)} local steps, "
          f"global step {last}", flush=True)
    if args.task_index == 0 and not args.no_eval:
        print(f"test accuracy: {evaluate(target, model, args.seed):.3f}", flush=True)
    return 0


def _wait_for_start(path: str, timeout_s: float = 300.0) -> float:
    """Say ready (``path.ready``), then wait for ``path``: it holds the common t0."""
    Path(path + ".ready").touch()
    deadline = time.monotonic() + timeout_s
    while not Path(path).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no start signal in {path} after {timeout_s:g} s")
        time.sleep(0.02)
    return float(Path(path).read_text())


def _printer(args: argparse.Namespace) -> Callable[[dict], None]:
    def on_step(record: dict) -> None:
        if args.records:
            with open(args.records, "a") as out:      # a whole line per write
                out.write(json.dumps(record) + "\n")
        if args.log_every and record["step"] % args.log_every == 0:
            print(f"worker {record['worker']}: step {record['step']}, global step "
                  f"{record['global_step']}, loss {record['loss']:.4f}", flush=True)
    return on_step


if __name__ == "__main__":
    sys.exit(main())
