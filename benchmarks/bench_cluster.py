"""Cluster benchmark: tfteach tasks against TensorFlow compat.v1 servers, one run.

Two topologies, the same for both runtimes, with ratios tfteach / TF:

- **apart** (the client is a process of its own): three task processes (1 ps + 2 workers)
  on loopback, the session on worker 0. Measured: the ready time (from spawning the tasks
  until a session on worker 0 has run an op on every task), a 1 MB and a 64 MB float32
  variable on the ps read by worker 0 every step (MB/s), and a training step of softmax
  regression 784x10, batch 100, variables on the ps, compute on worker 0 (ms per step).
- **in-process master** (as TF programs run: worker 0 is a ``tf.train.Server`` in the
  client process, the session's master; the ps and workers 1 and 2 are subprocesses).
  Every path a tensor takes, each at 1 MB and 64 MB: ps -> master, ps -> worker 1 (neither
  end the master), worker 1 -> worker 2, and a feed from the client to worker 1 (through
  the master); the softmax step computed on the master and the same step computed on
  worker 1; an in-graph step with towers on workers 0 and 1 (batch 100 each, variables on
  the ps, the gradients averaged on the master).

The ready times are taken one runtime after the other. Every other row keeps both clusters
up and is timed in interleaved rounds (``timing.interleaved``: a round of tfteach steps,
then a round of TF steps, the ratio being the median of the per-round ratios), so both
runtimes see the same machine: its speed drifts by tens of percent from minute to minute.
TensorFlow is optional: without it only tfteach's numbers are printed.

    python benchmarks/bench_cluster.py [--steps 30] [--only KEY,...]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "multihost"))
os.environ.setdefault("TFTEACH_VIRTUAL_GPUS", "0")

import hosts as net_hosts  # noqa: E402 - namespaces as hosts, shared with tests/multihost
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
PS, W0, W1, W2 = "/job:ps/task:0", "/job:worker/task:0", "/job:worker/task:1", "/job:worker/task:2"
MB1, MB64 = 1 << 20, 64 << 20


def _read(src: str, dst: str, nbytes: int) -> Callable:
    """A step that reads an ``nbytes`` variable of ``src`` on ``dst`` (a sum there)."""
    def build(tf, target: str, stack: contextlib.ExitStack) -> Callable:
        with tf.Graph().as_default():
            with tf.device(src):
                v = tf.Variable(tf.ones([nbytes // 4]), name=f"big{nbytes}")
            with tf.device(dst):
                s = tf.reduce_sum(v)
            sess = stack.enter_context(tf.Session(target))
            sess.run(v.initializer)
        return lambda: sess.run(s)
    return build


def _feed(dst: str, nbytes: int) -> Callable:
    """A step that feeds ``nbytes`` from the client to a sum on ``dst``."""
    def build(tf, target: str, stack: contextlib.ExitStack) -> Callable:
        value = np.ones([nbytes // 4], np.float32)
        with tf.Graph().as_default():
            with tf.device(dst):
                x = tf.placeholder(tf.float32, [nbytes // 4])
                s = tf.reduce_sum(x)
            sess = stack.enter_context(tf.Session(target))
        return lambda: sess.run(s, {x: value})
    return build


def _softmax_model(tf, towers: list[str], ps: str = PS, average_on: str = W0) -> tuple:
    """Softmax regression 784x10 (variables on ``ps``), one tower of batch 100 per device
    in ``towers``; with several, the gradients are averaged on ``average_on``. Returns
    (train op, loss, feeds)."""
    with tf.device(ps):
        w = tf.Variable(tf.zeros([784, 10]), name="W")
        b = tf.Variable(tf.zeros([10]), name="b")
    opt = tf.train.GradientDescentOptimizer(0.5)
    rng = np.random.default_rng(0)
    feeds, losses, grads = {}, [], []
    for dev in towers:
        with tf.device(dev):
            x = tf.placeholder(tf.float32, [None, 784])
            y = tf.placeholder(tf.float32, [None, 10])
            logits = tf.matmul(x, w) + b
            losses.append(tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(
                labels=y, logits=logits)))
            if len(towers) == 1:
                train = opt.minimize(losses[0])
            else:
                grads.append(opt.compute_gradients(losses[-1], [w, b]))
        feeds[x] = rng.random((100, 784), dtype=np.float32)
        feeds[y] = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 100)]
    if len(towers) > 1:
        with tf.device(average_on):
            mean = [tf.add_n([g[i][0] for g in grads]) / len(towers) for i in range(2)]
            loss = tf.add_n(losses) / len(towers)
        train = opt.apply_gradients(zip(mean, [w, b], strict=True))
        return train, loss, feeds
    return train, losses[0], feeds


def _train(towers: list[str]) -> Callable:
    """A training step of the softmax model with ``towers`` (``_softmax_model``)."""
    def build(tf, target: str, stack: contextlib.ExitStack) -> Callable:
        with tf.Graph().as_default():
            train, loss, feeds = _softmax_model(tf, towers)
            sess = stack.enter_context(tf.Session(target))
            sess.run(tf.global_variables_initializer())
        return lambda: sess.run([train, loss], feeds)
    return build


# key, label, goal, bytes moved per step (0: report ms per step), step builder
APART = (
    ("mb1", "1 MB ps->worker per step (MB/s)", ">= TF", MB1, _read(PS, W0, MB1)),
    ("mb64", "64 MB ps->worker per step (MB/s)", ">= TF", MB64, _read(PS, W0, MB64)),
    ("step_ms", "softmax regression step 784x10 b100 (ms)", "<= TF", 0, _train([W0])),
)
IN_PROCESS = (
    ("m_mb1", "1 MB ps->master (MB/s)", ">= TF", MB1, _read(PS, W0, MB1)),
    ("m_mb64", "64 MB ps->master (MB/s)", ">= TF", MB64, _read(PS, W0, MB64)),
    ("w_mb1", "1 MB ps->worker 1 (MB/s)", ">= TF", MB1, _read(PS, W1, MB1)),
    ("w_mb64", "64 MB ps->worker 1 (MB/s)", ">= TF", MB64, _read(PS, W1, MB64)),
    ("ww_mb1", "1 MB worker 1->worker 2 (MB/s)", ">= TF", MB1, _read(W1, W2, MB1)),
    ("ww_mb64", "64 MB worker 1->worker 2 (MB/s)", ">= TF", MB64, _read(W1, W2, MB64)),
    ("f_mb1", "1 MB feed client->worker 1 (MB/s)", ">= TF", MB1, _feed(W1, MB1)),
    ("f_mb64", "64 MB feed client->worker 1 (MB/s)", ">= TF", MB64, _feed(W1, MB64)),
    ("m_step", "softmax step, compute on master (ms)", "<= TF", 0, _train([W0])),
    ("w_step", "softmax step, compute on worker 1 (ms)", "<= TF", 0, _train([W1])),
    ("ig_step", "in-graph step, towers on workers 0+1 (ms)", "<= TF", 0, _train([W0, W1])),
)

# Hosts apart (network namespaces, root only): the ps on host 0, worker 1 on host 1, the
# client with worker 0 (its master, in-process) on host 2: every tensor takes the network.
NET = (
    ("n_w_mb1", "1 MB ps->worker 1, other hosts (MB/s)", ">= TF", MB1, _read(PS, W1, MB1)),
    ("n_w_mb64", "64 MB ps->worker 1, other hosts (MB/s)", ">= TF", MB64,
     _read(PS, W1, MB64)),
    ("n_c_mb1", "1 MB ps->client's host (MB/s)", ">= TF", MB1, _read(PS, W0, MB1)),
    ("n_c_mb64", "64 MB ps->client's host (MB/s)", ">= TF", MB64, _read(PS, W0, MB64)),
    ("n_step", "softmax step on worker 1, hosts apart (ms)", "<= TF", 0, _train([W1])),
)
NET_HOST_OF = {("ps", 0): 0, ("worker", 1): 1, ("worker", 0): 2}
NET_ROUNDS = 9      # more rounds than on loopback: the network path's times vary more


def _touch_all(tf, sess_target, tasks: tuple[str, ...] = (PS, W0, W1)) -> None:
    """Run one op on each task (the 'ready' check)."""
    with tf.Graph().as_default():
        outs = []
        for dev in tasks:
            with tf.device(dev):
                outs.append(tf.constant(1.0) + 1.0)
        with tf.Session(sess_target) as s:
            s.run(outs)


def _spec(workers: int) -> dict:
    from tfteach.distributed.transport.processes import free_ports
    ports = free_ports(1 + workers)
    return {"ps": [f"localhost:{ports[0]}"],
            "worker": [f"localhost:{p}" for p in ports[1:]]}


def _spawn(stack: contextlib.ExitStack, argv: list[str], env: dict) -> None:
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stack.callback(proc.wait)
    stack.callback(proc.kill)


def start_tfteach(stack: contextlib.ExitStack) -> tuple[object, str, float]:
    """tfteach's module, the session target and the ready time of a fresh LocalCluster."""
    import tfteach as tf
    from tfteach.cluster import LocalCluster
    t0 = time.perf_counter()
    cluster = stack.enter_context(LocalCluster(ps=1, workers=2))
    target = cluster.target("worker", 0)
    _touch_all(tf, target)
    return tf, target, time.perf_counter() - t0


def _tensorflow():
    """TensorFlow's compat.v1 module, or None without TensorFlow."""
    try:
        import tensorflow.compat.v1 as tf
    except ImportError:
        return None
    tf.disable_v2_behavior()
    return tf


def start_tensorflow(stack: contextlib.ExitStack) -> tuple[object, str, float] | None:
    """The same for three TensorFlow server processes; None without TensorFlow."""
    tf = _tensorflow()
    if tf is None:
        return None
    spec = _spec(2)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    t0 = time.perf_counter()
    for job, i in (("ps", 0), ("worker", 0), ("worker", 1)):
        _spawn(stack, [sys.executable, "-c", TF_TASK, json.dumps(spec), job, str(i)], env)
    target = f"grpc://{spec['worker'][0]}"
    _touch_all(tf, target)
    return tf, target, time.perf_counter() - t0


def _other_tasks(spec: dict) -> list[tuple[str, int]]:
    return [(job, i) for job in spec for i in range(len(spec[job])) if (job, i) != ("worker", 0)]


def in_process_tfteach(stack: contextlib.ExitStack, spec: dict | None = None,
                       place: Callable = lambda job, i, argv: argv) -> tuple[object, str]:
    """tfteach with worker 0 a Server in this process, the other tasks subprocesses
    (``place(job, index, argv)``: the command that runs a task where it belongs)."""
    import tfteach as tf
    from tfteach.distributed.local import task_registry as registry
    from tfteach.distributed.client.remote_session import remember_token
    spec, token = spec or _spec(3), secrets.token_urlsafe(32)
    env = {**os.environ, "TFTEACH_CLUSTER_TOKEN": token, "PYTHONPATH": str(Path(__file__)
                                                                           .resolve().parents[1]),
           "OPENBLAS_THREAD_TIMEOUT": registry.BLAS_SPIN,
           **dict.fromkeys(registry.BLAS_THREAD_ENVS, str(registry.blas_threads(4)))}
    path = Path(stack.enter_context(_tempdir())) / "cluster.json"
    path.write_text(json.dumps({"cluster": spec}))
    for job, i in _other_tasks(spec):
        _spawn(stack, place(job, i, [sys.executable, "-m", "tfteach.server", "--cluster",
                                     str(path), "--job", job, "--task", str(i)]), env)
    for address in [a for addresses in spec.values() for a in addresses]:
        remember_token(address, token)
    server = tf.train.Server(tf.train.ClusterSpec(spec), "worker", 0, token=token)
    stack.callback(server.stop)
    _touch_all(tf, server.target, _devices(spec))
    return tf, server.target


def in_process_tensorflow(stack: contextlib.ExitStack, spec: dict | None = None,
                          place: Callable = lambda job, i, argv: argv
                          ) -> tuple[object, str] | None:
    """TensorFlow with worker 0 a Server in this process, the other tasks subprocesses."""
    tf = _tensorflow()
    if tf is None:
        return None
    spec = spec or _spec(3)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    for job, i in _other_tasks(spec):
        _spawn(stack, place(job, i, [sys.executable, "-c", TF_TASK, json.dumps(spec), job,
                                     str(i)]), env)
    server = tf.train.Server(tf.train.ClusterSpec(spec), "worker", 0)
    _touch_all(tf, server.target, _devices(spec))
    return tf, server.target


def _devices(spec: dict) -> tuple[str, ...]:
    return tuple(f"/job:{job}/task:{i}" for job in spec for i in range(len(spec[job])))


@contextlib.contextmanager
def _tempdir():
    import tempfile
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as path:
        yield path


def _rate(seconds: float, nbytes: int) -> float:
    return nbytes / seconds / 1e6 if nbytes else seconds * 1e3


def _measure(rows: tuple, ours: tuple, theirs: tuple | None, steps: int,
             stack: contextlib.ExitStack, only: set[str], rounds: int = ROUNDS) -> None:
    """Build and time each of ``rows`` on both runtimes; print a line per row."""
    for key, label, goal, nbytes, build in rows:
        if only and key not in only:
            continue
        n = steps if nbytes < (16 << 20) else max(3, steps // 6)
        mine_fn = build(ours[0], ours[1], stack)
        if theirs is None:
            mine_fn()
            mine = statistics.median(per_call(mine_fn, n) for _ in range(rounds))
            print(f"{label:44} {_rate(mine, nbytes):10.2f} {'n/a':>10}", flush=True)
            continue
        mine, tf_s, time_ratio = interleaved(mine_fn, build(theirs[0], theirs[1], stack),
                                             rounds, n)
        ratio = 1 / time_ratio if nbytes else time_ratio      # MB/s: tfteach / TF
        print(f"{label:44} {_rate(mine, nbytes):10.2f} {_rate(tf_s, nbytes):10.2f} "
              f"{ratio:7.2f}  {goal}", flush=True)


def _net_spec(hosts: net_hosts.NetHosts, port: int) -> dict:
    return {"ps": [f"{hosts.address(0)}:{port}"],
            "worker": [f"{hosts.address(2)}:{port + 1}", f"{hosts.address(1)}:{port + 2}"]}


def hosts_apart(args: argparse.Namespace, only: set[str]) -> None:
    """The NET rows, run as root: this process makes the namespaces and runs the rest
    in a process of its own on the client's host (``--net-child``)."""
    reason = net_hosts.why_not()
    if reason:
        print(f"-- hosts apart: skipped ({reason})", flush=True)
        return
    print("-- hosts apart: ps, worker 1 and the client (worker 0 in it) on 3 namespaces",
          flush=True)
    with net_hosts.NetHosts(3) as hosts:
        child = [sys.executable, str(Path(__file__).resolve()), "--net-child", hosts.tag,
                 "--steps", str(args.steps), "--only", ",".join(sorted(only))]
        subprocess.run(hosts.command(2, child), check=False)


def _ready(start: Callable, *args) -> tuple[object, float]:
    t0 = time.perf_counter()
    result = start(*args)
    return result, time.perf_counter() - t0


def net_child(args: argparse.Namespace, only: set[str]) -> None:
    """On the client's host: both clusters up, the ready times, then the NET rows."""
    hosts = net_hosts.NetHosts(3, args.net_child)

    def place(job: str, index: int, argv: list[str]) -> list[str]:
        return hosts.command(NET_HOST_OF[(job, index)], argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tfteach  # noqa: F401 - imported before the clocks start, as TF below
    _tensorflow()
    with contextlib.ExitStack() as stack:
        ours, ours_s = _ready(in_process_tfteach, stack, _net_spec(hosts, 2220), place)
        theirs, tf_s = _ready(in_process_tensorflow, stack, _net_spec(hosts, 2230), place)
        tf_text = f"{tf_s:10.2f} {ours_s / tf_s:7.2f}" if theirs else f"{'n/a':>10}"
        print(f"{'cluster ready, hosts apart (s)':44} {ours_s:10.2f} {tf_text}  <= TF",
              flush=True)
        _measure(NET, ours, theirs, args.steps, stack, only, NET_ROUNDS)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30, help="steps per round")
    parser.add_argument("--only", default="", help="comma-separated row keys to run")
    parser.add_argument("--hosts-only", action="store_true",
                        help="only the rows with tasks on hosts apart (root)")
    parser.add_argument("--net-child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    if args.net_child:
        net_child(args, only)
        return 0
    print(f"{'benchmark':44} {'tfteach':>10} {'TF 2.x v1':>10} {'ratio':>7}  goal")
    if args.hosts_only:
        hosts_apart(args, only)
        return 0
    with contextlib.ExitStack() as stack:
        ours = start_tfteach(stack)
        theirs = start_tensorflow(stack)
        tf_ready = f"{theirs[2]:10.2f}" if theirs else f"{'n/a':>10}"
        ratio = f"{ours[2] / theirs[2]:7.2f}" if theirs else f"{'':>7}"
        print(f"{'cluster ready, 1 ps + 2 workers (s)':44} {ours[2]:10.2f} {tf_ready} "
              f"{ratio}  <= 1/3 of TF", flush=True)
        _measure(APART, ours, theirs, args.steps, stack, only)
    with contextlib.ExitStack() as stack:
        print("-- in-process master: worker 0 in the client, ps + workers 1, 2 apart",
              flush=True)
        ours = in_process_tfteach(stack)
        theirs = in_process_tensorflow(stack)
        _measure(IN_PROCESS, ours, theirs, args.steps, stack, only)
    hosts_apart(args, only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
