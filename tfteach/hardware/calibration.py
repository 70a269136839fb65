"""``calibrate()``: measure this machine and return its ``MachineProfile`` (a few seconds).

What it times, each as the median of a few repetitions of the calling thread's CPU time
(``use_clock("wall")`` for wall-clock time; the machine may be shared with other jobs):

- a float32 and a float64 matrix product (NumPy, as tfteach's kernels call it) with one BLAS
  thread, as a virtual GPU computes, and with the library's default, as the CPU device does:
  peak FLOP/s;
- copies of arrays twice and a quarter the last-level cache's size: memory and cache
  bandwidth (bytes read + written per second); NumPy's float32 Add on cached arrays: the
  element-wise FLOP/s;
- tfteach's own per-op cost: steps of a hundred tiny ops of one kind (Identity, Add of a
  constant, Relu, Sum, MatMul, Reshape, sparse softmax cross-entropy, the gradient-descent
  and Adagrad updates, RandomUniform) run through a tfteach ``Session`` on GPU:0, against a
  one-op step: the per-step overhead and each kind's fixed cost (other op types take the
  figure of the kind they resemble, ``_KINDS``);
- TCP on loopback: half a round trip of one byte (latency) and one large send (bandwidth),
  the ``loopback`` and ``network`` links (this machine's tasks talk over loopback).

Virtual GPUs share host memory, so the profile says ``shares_host_memory``: feeds and fetches
cost no copy, and a copy between devices costs a host memory copy.
"""
from __future__ import annotations

import socket
import statistics
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from tfteach.devices import discovery
from tfteach.devices.gpu import gpu_count
from tfteach.framework.graph import Graph
from tfteach.hardware.profiles import DeviceProfile, LinkProfile, MachineProfile
from tfteach.ops import array_ops, control_ops, math_ops, nn_ops, random_ops, state_ops
from tfteach.ops.constant_op import constant
from tfteach.runtime import blas
from tfteach.runtime.session import Session
from tfteach.train.optimizers import AdagradOptimizer, GradientDescentOptimizer

# Op types whose fixed cost is measured, and the op types that take each one's figure.
_KINDS = {"Add": ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Equal",
                  "Greater", "Less", "SquaredDifference", "BiasAdd", "Select", "AddN",
                  "FloorDiv", "FloorMod", "Pow", "NotEqual", "GreaterEqual", "LessEqual"),
          "Relu": ("Relu", "ReluGrad", "Neg", "Square", "Exp", "Log", "Sqrt", "Tanh",
                   "Sigmoid", "Cast", "Abs", "Sign", "Reciprocal", "ZerosLike", "OnesLike",
                   "BroadcastTo", "Tile", "Transpose", "TanhGrad", "SigmoidGrad", "Fill"),
          "Sum": ("Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin", "BiasAddGrad",
                  "L2Loss"),
          "MatMul": ("MatMul",),
          "Reshape": ("Reshape", "ExpandDims", "Squeeze", "Shape", "Size", "Rank"),
          "SparseSoftmaxCrossEntropyWithLogits": (
              "SparseSoftmaxCrossEntropyWithLogits", "SoftmaxCrossEntropyWithLogits",
              "Softmax", "LogSoftmax"),
          "ApplyGradientDescent": ("ApplyGradientDescent", "AssignSub", "AssignAdd", "Assign",
                                   "ApplyMomentum"),
          "ApplyAdagrad": ("ApplyAdagrad", "ApplyRMSProp", "ApplyAdam"),
          "RandomUniform": ("RandomUniform", "RandomStandardNormal", "TruncatedNormal")}
COPIES = 100


# The clock of every timing here but the loopback's: the CPU time of the calling thread,
# which runs NumPy with one BLAS thread and a single-device tfteach step whole (an inline
# plan). On a machine shared with other jobs, wall-clock time would count their time too.
CLOCKS = {"thread": time.thread_time, "wall": time.perf_counter}
_clock = {"now": time.thread_time}


def use_clock(name: str) -> None:
    """Time with the calling thread's CPU time (``"thread"``, the default) or wall-clock
    time (``"wall"``)."""
    _clock["now"] = CLOCKS[name]


def _median_time(fn: Callable[[], object], repeat: int, inner: int = 1) -> float:
    now = _clock["now"]
    fn()
    times = []
    for _ in range(repeat):
        t = now()
        for _ in range(inner):
            fn()
        times.append((now() - t) / inner)
    return statistics.median(times)


def matmul_flops(dtype: str, one_thread: bool, n: int = 384) -> float:
    """FLOP/s of an n x n matrix product (one BLAS thread or the library default)."""
    a = np.random.default_rng(0).standard_normal((n, n)).astype(dtype)
    (blas.one_thread if one_thread else blas.restore_default)()
    try:
        return 2.0 * n ** 3 / _median_time(lambda: np.matmul(a, a), 7)
    finally:
        blas.restore_default()


def copy_bandwidth(nbytes: int) -> float:
    """Bytes read and written per second by copying an ``nbytes`` array into a fresh one."""
    a = np.ones(max(1, nbytes // 4), np.float32)
    return 2.0 * nbytes / _median_time(lambda: a.copy(), 7)


def cache_bytes() -> int:
    """The last-level cache's size as the OS reports it (8 MiB where it does not)."""
    for index in (3, 2):
        path = Path(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size")
        try:
            text = path.read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(text[-1:], 1)
        return int(text.rstrip("KM")) * scale
    return 8 << 20


def vector_flops(n: int = 1 << 18) -> float:
    """Element-wise FLOP/s: elements per second of NumPy's float32 Add on cached arrays."""
    a = np.ones(n, np.float32)
    return n / _median_time(lambda: np.add(a, a), 7, inner=3)


def _one(kind: str, x: Any, labels: Any, var: Any) -> Any:
    """One op of ``kind`` on tiny inputs (a 2 x 2 float32 ``x``)."""
    if kind == "ApplyGradientDescent":
        return GradientDescentOptimizer(0.1).apply_gradients([(x, var)])
    if kind == "ApplyAdagrad":
        return AdagradOptimizer(0.1).apply_gradients([(x, var)])
    return {"Identity": lambda: array_ops.identity(x), "Add": lambda: math_ops.add(x, 0.5),
            "Relu": lambda: nn_ops.relu(x), "Sum": lambda: math_ops.reduce_sum(x, 1),
            "MatMul": lambda: math_ops.matmul(x, x),
            "Reshape": lambda: array_ops.reshape(x, [4]),
            "SparseSoftmaxCrossEntropyWithLogits":
                lambda: nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x),
            "RandomUniform": lambda: random_ops.random_uniform([2, 2])}[kind]()


def _copies(kind: str, n: int) -> tuple[Graph, Any, dict, list]:
    """A graph of ``n`` independent ops of ``kind``, its fetch, feed and initializer."""
    g = Graph()
    with g.as_default(), g.device("/gpu:0" if _gpus() else "/cpu:0"):
        x = array_ops.placeholder("float32", [2, 2], name="x")
        labels = constant(np.zeros(2, np.int64))
        var = state_ops.Variable(np.zeros((2, 2), np.float32))
        fetch = control_ops.group(*[_one(kind, x, labels, var) for _ in range(n)])
        init = [state_ops.global_variables_initializer()]
    return g, fetch, {x: np.ones((2, 2), np.float32)}, init


def _gpus() -> int:
    return gpu_count() or discovery.virtual_gpu_count()


def step_time(graph: Graph, fetch: object, feed: dict, init: list | None = None,
              repeat: int = 9) -> float:
    """Median seconds of ``Session.run(fetch, feed)`` in a new session (which first runs
    ``init``), after a warm-up."""
    with Session(graph=graph) as sess:
        if init:
            sess.run(init)
        return _median_time(lambda: sess.run(fetch, feed), repeat, inner=5)


def _identity_chain(n: int) -> tuple[Graph, Any, dict]:
    """``n`` Identity ops, each reading the one before: every output is kept and freed."""
    g = Graph()
    with g.as_default(), g.device("/gpu:0" if _gpus() else "/cpu:0"):
        x = y = array_ops.placeholder("float32", [2, 2], name="x")
        for _ in range(n):
            y = array_ops.identity(y)
    return g, y, {x: np.ones((2, 2), np.float32)}


def op_overheads() -> tuple[float, dict]:
    """(seconds of a one-op step, {measured op kind: seconds per op}) through a Session.

    Each kind is timed as independent copies whose outputs nobody reads; an output that is
    read costs the executor its bookkeeping (kept, counted against the device, freed), the
    difference between a chain of Identity ops and independent ones, added to every kind.
    """
    base_s = step_time(*_copies("Identity", 1))
    per_op = {kind: max(0.0, (step_time(*_copies(kind, COPIES)) - base_s) / (COPIES - 1))
              for kind in ("Identity", *_KINDS)}
    chained = max(0.0, (step_time(*_identity_chain(COPIES)) - base_s) / (COPIES - 1))
    read = max(0.0, chained - per_op["Identity"])
    return base_s, {kind: cost + read for kind, cost in per_op.items()}


def loopback_link(nbytes: int = 16 << 20, pings: int = 200) -> LinkProfile:
    """TCP on 127.0.0.1: latency (half a one-byte round trip) and bandwidth (one big send)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    worker = threading.Thread(target=_echo_then_drain, args=(server, pings, nbytes), daemon=True)
    worker.start()
    with socket.create_connection(("127.0.0.1", port)) as c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t = time.perf_counter()
        for _ in range(pings):
            c.sendall(b"x")
            c.recv(1)
        latency = (time.perf_counter() - t) / pings / 2
        payload = bytes(nbytes)
        t = time.perf_counter()
        c.sendall(payload)
        c.recv(1)
        bandwidth = nbytes / max(time.perf_counter() - t - 2 * latency, 1e-9)
    worker.join(5)
    server.close()
    return LinkProfile("TCP loopback (measured)", bandwidth, latency)


def _echo_then_drain(server: socket.socket, pings: int, nbytes: int) -> None:
    conn, _ = server.accept()
    with conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(pings):
            conn.sendall(conn.recv(1))
        got = 0
        while got < nbytes:
            chunk = conn.recv(1 << 20)
            if not chunk:
                return
            got += len(chunk)
        conn.sendall(b"k")


def calibrate(name: str = "this machine") -> MachineProfile:
    """This machine's profile, measured now (a few seconds)."""
    cache = cache_bytes()
    bandwidth, in_cache = copy_bandwidth(2 * cache), copy_bandwidth(cache // 4)
    base_s, per_op = op_overheads()
    launch = {t: per_op[kind] for kind, types in _KINDS.items() for t in types}
    launch.update({"Const": 0.0, "NoOp": 0.0})       # folded out of tfteach's programs
    gpu = DeviceProfile("virtual GPU (this CPU, one BLAS thread)",
                        {"float32": matmul_flops("float32", True),
                         "float64": matmul_flops("float64", True)},
                        bandwidth, per_op["Add"], per_op["Identity"],
                        discovery.DEFAULT_VIRTUAL_MEMORY_MB << 20, launch,
                        vector_flops(), cache, in_cache)
    cpu = replace(gpu, name="CPU (all cores)",
                  flops={"float32": matmul_flops("float32", False),
                         "float64": matmul_flops("float64", False)},
                  memory_bytes=discovery._host_memory())
    copy = LinkProfile("host memory copy (measured)", bandwidth / 2, per_op["Identity"])
    tcp = loopback_link()
    return MachineProfile(name, "this machine, measured by calibrate()", cpu, gpu, _gpus(),
                          copy, copy, tcp, tcp, step_overhead_s=max(0.0, base_s - per_op[
                              "Identity"]), shares_host_memory=True,
                          sources=(f"measured {time.strftime('%Y-%m-%d %H:%M:%S')}",))
