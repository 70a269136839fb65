"""``calibrate()``: measure this machine and return its ``MachineProfile`` (a few seconds).

What it times, each as the median of a few repetitions (the machine may be busy):

- a float32 and a float64 matrix product (NumPy, as tfteach's kernels call it) with one BLAS
  thread, as a virtual GPU computes, and with the library's default, as the CPU device does:
  peak FLOP/s;
- copies of arrays twice and a quarter the last-level cache's size: memory and cache
  bandwidth (bytes read + written per second); NumPy's float32 Add on cached arrays: the
  element-wise FLOP/s;
- tfteach's own per-op cost: chains of cheap ops run through a tfteach ``Session`` on GPU:0
  (Add of a constant, Relu, Sum, MatMul, Identity), minus a one-op step: the per-step overhead and
  each op kind's fixed cost;
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
from typing import Callable

import numpy as np

from tfteach.devices import discovery
from tfteach.devices.gpu import gpu_count
from tfteach.framework.graph import Graph
from tfteach.hardware.profiles import DeviceProfile, LinkProfile, MachineProfile
from tfteach.ops import array_ops, math_ops, nn_ops
from tfteach.runtime import blas
from tfteach.runtime.session import Session

# Op types whose fixed cost is measured, and the op kinds that take each one's figure.
_KINDS = {"Add": ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Equal",
                  "Greater", "Less", "SquaredDifference", "BiasAdd", "Select", "AddN"),
          "Relu": ("Relu", "ReluGrad", "Neg", "Square", "Exp", "Log", "Sqrt", "Tanh",
                   "Sigmoid", "Cast", "Abs", "Sign", "Reciprocal", "ZerosLike", "OnesLike"),
          "Sum": ("Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin", "BiasAddGrad"),
          "MatMul": ("MatMul",)}
CHAIN = 100


def _median_time(fn: Callable[[], object], repeat: int, inner: int = 1) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t) / inner)
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


def _chain(kind: str, length: int) -> tuple[Graph, object]:
    g = Graph()
    with g.as_default(), g.device("/gpu:0" if _gpus() else "/cpu:0"):
        y = array_ops.placeholder("float32", [1, 1], name="x")
        for _ in range(length):
            y = {"Add": lambda t: math_ops.add(t, 0.5), "Relu": nn_ops.relu,
                 "Sum": lambda t: math_ops.reduce_sum(t, 1, keepdims=True),
                 "MatMul": lambda t: math_ops.matmul(t, t),
                 "Identity": array_ops.identity}[kind](y)
    return g, y


def _gpus() -> int:
    return gpu_count() or discovery.virtual_gpu_count()


def step_time(graph: Graph, fetch: object, feed: dict, repeat: int = 9,
              init: list | None = None) -> float:
    """Median seconds of ``Session.run(fetch, feed)`` in a new session (which first runs
    ``init``), after a warm-up."""
    with Session(graph=graph) as sess:
        if init:
            sess.run(init)
        return _median_time(lambda: sess.run(fetch, feed), repeat, inner=5)


def op_overheads() -> tuple[float, dict]:
    """(seconds of a one-op step, {measured op kind: seconds per op}) through a Session."""
    feed_value = np.ones((1, 1), np.float32)
    base_graph, base = _chain("Identity", 1)
    base_s = step_time(base_graph, base, {base_graph.get_tensor_by_name("x:0"): feed_value})
    per_op = {}
    for kind in ("Identity", *_KINDS):
        g, y = _chain(kind, CHAIN)
        total = step_time(g, y, {g.get_tensor_by_name("x:0"): feed_value})
        per_op[kind] = max(0.0, (total - base_s) / (CHAIN - 1))
    return base_s, per_op


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
