"""Cluster benchmark: tfteach tasks against TensorFlow compat.v1 servers, one run.

Each runtime gets three task processes (1 ps + 2 workers) on loopback, and this process is
the client. Measured for both, then printed with ratios tfteach / TF:
1. ready: from spawning the tasks until a session on worker 0 has run an op on every task;
2. a 1 MB and a 64 MB float32 variable on the ps read by worker 0 every step (MB/s);
3. a training step of softmax regression 784x10, batch 100, variables on the ps, compute on
   worker 0 (ms per step).
The ready times are taken one runtime after the other. For 2 and 3 both clusters stay up and
the steps are timed in interleaved rounds (``timing.interleaved``: a round of tfteach steps,
then a round of TF steps, the ratio being the median of the per-round ratios), so both
runtimes see the same machine: its speed drifts by tens of percent from minute to minute.
TensorFlow is optional: without it only tfteach's numbers are printed.

    python benchmarks/bench_cluster.py [--steps 30]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TFTEACH_VIRTUAL_GPUS", "0")

from timing import interleaved, per_call  # noqa: E402

TF_TASK = """
import sys, json, os
os.environ["CUDA_VISIBLE_DEVICES"] = ""
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
tf.train.Server(cluster, job_name=sys.argv[2], task_index=int(sys.argv[3])).join()
"""
ROUNDS = 5
BENCHMARKS = (  # key, label, goal, bytes moved per step (0: report ms per step)
    ("mb1", "1 MB ps->worker per step (MB/s)", ">= TF", 1 << 20),
    ("mb64", "64 MB ps->worker per step (MB/s)", ">= TF", 64 << 20),
    ("step_ms", "softmax regression step 784x10 b100 (ms)", "<= TF", 0),
)


def _touch_all(tf, sess_target) -> None:
    """Run one op on each task (the 'ready' check)."""
    g = tf.Graph()
    with g.as_default():
        outs = []
        for dev in ("/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"):
            with tf.device(dev):
                outs.append(tf.constant(1.0) + 1.0)
        with tf.Session(sess_target) as s:
            s.run(outs)


def _transfer(tf, target: str, nbytes: int, stack: contextlib.ExitStack) -> Callable:
    """A step that reads an ``nbytes`` variable of the ps on worker 0."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.ones([nbytes // 4]), name=f"big{nbytes}")
        with tf.device("/job:worker/task:0"):
            s = tf.reduce_sum(v)
        sess = stack.enter_context(tf.Session(target))
        sess.run(v.initializer)
    return lambda: sess.run(s)


def _train_step(tf, target: str, stack: contextlib.ExitStack) -> Callable:
    """A softmax regression training step: variables on the ps, compute on worker 0."""
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(tf.zeros([784, 10]), name="W")
            b = tf.Variable(tf.zeros([10]), name="b")
        with tf.device("/job:worker/task:0"):
            x = tf.placeholder(tf.float32, [None, 784])
            y = tf.placeholder(tf.float32, [None, 10])
            logits = tf.matmul(x, w) + b
            loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(labels=y,
                                                                                logits=logits))
            train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
        rng = np.random.default_rng(0)
        xs = rng.random((100, 784), dtype=np.float32)
        ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 100)]
        sess = stack.enter_context(tf.Session(target))
        sess.run(tf.global_variables_initializer())
    return lambda: sess.run([train, loss], {x: xs, y: ys})


def _steps(tf, target: str, stack: contextlib.ExitStack) -> dict[str, Callable]:
    return {"mb1": _transfer(tf, target, 1 << 20, stack),
            "mb64": _transfer(tf, target, 64 << 20, stack),
            "step_ms": _train_step(tf, target, stack)}


def start_tfteach(stack: contextlib.ExitStack) -> tuple[object, str, float]:
    """tfteach's module, the session target and the ready time of a fresh LocalCluster."""
    import tfteach as tf
    from tfteach.cluster import LocalCluster
    t0 = time.perf_counter()
    cluster = stack.enter_context(LocalCluster(ps=1, workers=2))
    target = cluster.target("worker", 0)
    _touch_all(tf, target)
    return tf, target, time.perf_counter() - t0


def start_tensorflow(stack: contextlib.ExitStack) -> tuple[object, str, float] | None:
    """The same for three TensorFlow server processes; None without TensorFlow."""
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    import json

    from tfteach.distributed.processes import free_ports
    tf.disable_v2_behavior()
    ports = free_ports(3)
    spec = {"ps": [f"localhost:{ports[0]}"],
            "worker": [f"localhost:{ports[1]}", f"localhost:{ports[2]}"]}
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    t0 = time.perf_counter()
    for job, i in (("ps", 0), ("worker", 0), ("worker", 1)):
        proc = subprocess.Popen([sys.executable, "-c", TF_TASK, json.dumps(spec), job, str(i)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(proc.wait)
        stack.callback(proc.kill)
    target = f"grpc://{spec['worker'][0]}"
    _touch_all(tf, target)
    return tf, target, time.perf_counter() - t0


def _rate(seconds: float, nbytes: int) -> float:
    return nbytes / seconds / 1e6 if nbytes else seconds * 1e3


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30, help="steps per round")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        ours_tf, ours_target, ours_ready = start_tfteach(stack)
        theirs = start_tensorflow(stack)
        ours = _steps(ours_tf, ours_target, stack)
        their_steps = _steps(theirs[0], theirs[1], stack) if theirs else None
        print(f"{'benchmark':44} {'tfteach':>10} {'TF 2.x v1':>10} {'ratio':>7}  goal")
        tf_ready = f"{theirs[2]:10.2f}" if theirs else f"{'n/a':>10}"
        ratio = f"{ours_ready / theirs[2]:7.2f}" if theirs else f"{'':>7}"
        print(f"{'cluster ready, 1 ps + 2 workers (s)':44} {ours_ready:10.2f} {tf_ready} "
              f"{ratio}  <= 1/3 of TF")
        for key, label, goal, nbytes in BENCHMARKS:
            steps = args.steps if nbytes < (16 << 20) else max(3, args.steps // 6)
            if their_steps is None:
                ours[key]()
                mine = statistics.median(per_call(ours[key], steps) for _ in range(ROUNDS))
                print(f"{label:44} {_rate(mine, nbytes):10.2f} {'n/a':>10}")
                continue
            mine, tf_s, time_ratio = interleaved(ours[key], their_steps[key], ROUNDS, steps)
            ratio = 1 / time_ratio if nbytes else time_ratio      # MB/s: tfteach / TF
            print(f"{label:44} {_rate(mine, nbytes):10.2f} {_rate(tf_s, nbytes):10.2f} "
                  f"{ratio:7.2f}  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
