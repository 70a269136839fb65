"""Cluster benchmark (issue 4): tfteach tasks against TensorFlow compat.v1 servers, one run.

Each runtime gets three task processes (1 ps + 2 workers) on loopback, and this process is
the client. Measured for both, then printed with ratios tfteach / TF:
1. ready: from spawning the tasks until a session on worker 0 has run an op on every task;
2. a 1 MB and a 64 MB float32 variable on the ps read by worker 0 every step (MB/s);
3. a training step of softmax regression 784x10, batch 100, variables on the ps, compute on
   worker 0 (ms per step).
TensorFlow is optional: without it only tfteach's numbers are printed.

    python benchmarks/bench_cluster.py [--steps 30]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TFTEACH_VIRTUAL_GPUS", "0")

TF_TASK = """
import sys, json, os
os.environ["CUDA_VISIBLE_DEVICES"] = ""
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
tf.train.Server(cluster, job_name=sys.argv[2], task_index=int(sys.argv[3])).join()
"""


def _free_ports(n: int) -> list[int]:
    from tfteach.distributed.processes import free_ports
    return free_ports(n)


def _median(fn, steps: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _touch_all(tf, sess_target, config=None):
    """Run one op on each task (the 'ready' check)."""
    g = tf.Graph()
    with g.as_default():
        outs = []
        for dev in ("/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1"):
            with tf.device(dev):
                outs.append(tf.constant(1.0) + 1.0)
        with tf.Session(sess_target, config=config) as s:
            s.run(outs)


def _transfer(tf, target, nbytes: int, steps: int) -> float:
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.ones([nbytes // 4]), name=f"big{nbytes}")
        with tf.device("/job:worker/task:0"):
            s = tf.reduce_sum(v)
        with tf.Session(target) as sess:
            sess.run(v.initializer)
            return nbytes / _median(lambda: sess.run(s), steps) / 1e6


def _train_step(tf, target, steps: int) -> float:
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
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            return _median(lambda: sess.run([train, loss], {x: xs, y: ys}), steps) * 1e3


def _measure(tf, target: str, t0: float, steps: int) -> dict:
    """The ready time (tasks spawned at ``t0``) and the three measurements on ``target``."""
    _touch_all(tf, target)
    ready = time.perf_counter() - t0
    return {"ready_s": ready, "mb1": _transfer(tf, target, 1 << 20, steps),
            "mb64": _transfer(tf, target, 64 << 20, max(5, steps // 3)),
            "step_ms": _train_step(tf, target, steps)}


def bench_tfteach(steps: int) -> dict:
    import tfteach as tf
    from tfteach.cluster import LocalCluster
    t0 = time.perf_counter()
    cluster = LocalCluster(ps=1, workers=2)
    try:
        target = cluster.target("worker", 0)
        return _measure(tf, target, t0, steps)
    finally:
        cluster.close()


def bench_tensorflow(steps: int) -> dict | None:
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    import json
    tf.disable_v2_behavior()
    ports = _free_ports(3)
    spec = {"ps": [f"localhost:{ports[0]}"],
            "worker": [f"localhost:{ports[1]}", f"localhost:{ports[2]}"]}
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", TF_TASK, json.dumps(spec), job, str(i)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for job, i in (("ps", 0), ("worker", 0), ("worker", 1))]
    try:
        target = f"grpc://{spec['worker'][0]}"
        return _measure(tf, target, t0, steps)
    finally:
        for p in procs:
            p.kill()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    ours = bench_tfteach(args.steps)
    theirs = bench_tensorflow(args.steps)
    rows = [("cluster ready, 1 ps + 2 workers (s)", "ready_s", "<= 1/3 of TF"),
            ("1 MB ps->worker per step (MB/s)", "mb1", ">= TF"),
            ("64 MB ps->worker per step (MB/s)", "mb64", ">= TF"),
            ("softmax regression step 784x10 b100 (ms)", "step_ms", "<= TF")]
    print(f"{'benchmark':44} {'tfteach':>10} {'TF 2.x v1':>10} {'ratio':>7}  goal")
    for label, key, goal in rows:
        tf_val = f"{theirs[key]:10.2f}" if theirs else f"{'n/a':>10}"
        ratio = f"{ours[key] / theirs[key]:7.2f}" if theirs else f"{'':>7}"
        print(f"{label:44} {ours[key]:10.2f} {tf_val} {ratio}  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
