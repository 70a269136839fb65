"""Validation: predicted against measured step times on this machine (a benchmark, not a test).

``validate(profile)`` builds each case's graph on one device (the default, GPU:0: a virtual
GPU here), predicts its step with the profile (by default ``calibrate()``'s), then measures
the same step in a tfteach ``Session`` (the median of several timed rounds after a warm-up;
by default the CPU time of the thread that runs the whole step, which other jobs on a shared
machine do not inflate, ``clock="wall"`` for wall-clock time)
(in a few passes over all cases, each calibrating first) and reports each error
``(predicted - measured) / measured`` and their median. The cases:
the lessons' models (lesson 4's tiny graph and two products, lesson 5's and lesson 6's
training steps, lesson 6's forward model, lesson 12's Adagrad trainer), the benchmarks' MLP
step (``benchmarks/bench_training.py``), a chain of matrix products, many small ops, large
element-wise ops, large reductions and large transcendental ops.

Used by ``python -m tfteach.hardware validate`` and ``benchmarks/bench_hardware.py``.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tfteach.framework.graph import Graph
from tfteach.hardware.calibration import calibrate, step_time, use_clock
from tfteach.hardware.predict import predict
from tfteach.hardware.profiles import MachineProfile
from tfteach.ops import array_ops, init_ops, math_ops, nn_ops, random_ops, state_ops
from tfteach.ops import variable_scope as vs
from tfteach.ops.constant_op import constant
from tfteach.train.optimizers import AdagradOptimizer, GradientDescentOptimizer

F32 = "float32"


@dataclass
class Row:
    """One case: predicted and measured seconds, and the error ``(p - m) / m`` (over several
    passes: the medians, and the median of the passes' errors)."""

    name: str
    ops: int
    predicted_s: float
    measured_s: float
    error: float = 0.0

    def __post_init__(self) -> None:
        if not self.error:
            self.error = (self.predicted_s - self.measured_s) / self.measured_s


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _dense(x, n_out: int, name: str, relu: bool = True):  # noqa: ANN001, ANN202
    with vs.variable_scope(name):
        w = vs.get_variable("weights", [int(x.shape[1]), n_out],
                            initializer=init_ops.glorot_uniform_initializer(seed=1))
        b = vs.get_variable("biases", [n_out], initializer=init_ops.zeros_initializer())
        y = math_ops.matmul(x, w) + b
        return nn_ops.relu(y) if relu else y


def _classifier_step(layers: list[int], batch: int, optimizer=None) -> tuple:  # noqa: ANN001
    """A training step of a dense classifier on digits-sized inputs (lessons 5 and 6)."""
    x = array_ops.placeholder(F32, [None, 64], name="x")
    y = array_ops.placeholder("int64", [None], name="y")
    h = x
    for i, n in enumerate(layers):
        h = _dense(h, n, f"layer{i}", relu=i < len(layers) - 1)
    loss = math_ops.reduce_mean(nn_ops.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                               logits=h))
    train = (optimizer or GradientDescentOptimizer(0.3)).minimize(loss)
    rng = _rng()
    return train, {x: rng.random((batch, 64), dtype=np.float32),
                   y: rng.integers(0, 10, batch).astype(np.int64)}


def bench_mlp() -> tuple:
    """benchmarks/bench_training.py: 64-128-10 MLP, one SGD step, batch 128."""
    return _classifier_step([128, 10], 128, GradientDescentOptimizer(0.1))


def lesson4_tiny() -> tuple:
    x = constant([[1.0, 2.0]], name="x")
    xw = math_ops.matmul(x, constant([[1.0], [1.0]]), name="xw")
    out = math_ops.add(math_ops.add(xw, constant([0.5])), math_ops.square(x), name="out")
    return out, {}


def lesson4_two_products() -> tuple:
    rng = np.random.RandomState(0)
    sums = []
    for i in range(2):
        m = constant(rng.rand(512, 512).astype(np.float32), name=f"m{i}")
        sums.append(math_ops.reduce_sum(math_ops.matmul(m, m), name=f"sum_{i}"))
    return sums, {}


def lesson5_tower() -> tuple:
    return _classifier_step([256, 256, 10], 256)


def lesson6_step() -> tuple:
    return _classifier_step([1024, 64, 10], 512)


def lesson6_forward() -> tuple:
    rng = np.random.RandomState(0)
    x = constant(rng.rand(256, 64).astype(np.float32), name="x")
    h = nn_ops.relu(math_ops.matmul(x, constant(rng.randn(64, 1024).astype(np.float32))))
    h2 = nn_ops.relu(math_ops.matmul(h, constant(rng.randn(1024, 64).astype(np.float32))))
    return math_ops.matmul(h2, constant(rng.randn(64, 10).astype(np.float32))), {}


def lesson12_adagrad() -> tuple:
    x = random_ops.random_uniform([32, 1], -1.0, 1.0)
    w, b = state_ops.Variable(array_ops.zeros([1, 1])), state_ops.Variable(array_ops.zeros([1]))
    loss = math_ops.reduce_mean(math_ops.square(math_ops.matmul(x, w) + b - (2 * x + 1)))
    return AdagradOptimizer(0.5).minimize(loss), {}


def matmul_chain() -> tuple:
    rng = _rng()
    h = constant(rng.random((384, 384), dtype=np.float32))
    for i in range(4):
        h = math_ops.matmul(h, constant(rng.random((384, 384), dtype=np.float32) / 384),
                            name=f"product{i}")
    return h, {}


def many_small_ops() -> tuple:
    x = array_ops.placeholder(F32, [4], name="x")
    y = x
    for i in range(100):
        y = math_ops.multiply(math_ops.add(y, 1.0), 0.5) if i % 2 else nn_ops.relu(y - 0.1)
    return y, {x: np.ones(4, np.float32)}


def large_elementwise() -> tuple:
    a = array_ops.placeholder(F32, [None], name="a")
    b = array_ops.placeholder(F32, [None], name="b")
    out = math_ops.maximum(a * b + a, 0.0)
    rng = _rng()
    return out, {a: rng.random(1 << 21, dtype=np.float32), b: rng.random(1 << 21, dtype=np.float32)}


def large_reductions() -> tuple:
    x = array_ops.placeholder(F32, [1024, 2048], name="x")
    out = [math_ops.reduce_sum(x), math_ops.reduce_mean(x, 0), math_ops.reduce_max(x, 1)]
    return out, {x: _rng().random((1024, 2048), dtype=np.float32)}


def large_transcendental() -> tuple:
    x = array_ops.placeholder(F32, [None], name="x")
    return nn_ops.tanh(math_ops.exp(-x)), {x: _rng().random(1 << 20, dtype=np.float32)}


CASES: dict[str, Callable[[], tuple]] = {
    "lesson 4 tiny graph": lesson4_tiny, "lesson 4 two products": lesson4_two_products,
    "lesson 5 tower step": lesson5_tower, "lesson 6 training step": lesson6_step,
    "lesson 6 forward": lesson6_forward, "lesson 12 Adagrad step": lesson12_adagrad,
    "bench MLP step": bench_mlp, "matmul chain": matmul_chain,
    "many small ops": many_small_ops, "large element-wise": large_elementwise,
    "large reductions": large_reductions, "large exp/tanh": large_transcendental,
}


def _build(case: Callable[[], tuple]) -> tuple[Graph, object, dict, list]:
    g = Graph()
    with g.as_default():
        fetch, feed = case()
        init = [state_ops.global_variables_initializer()] if state_ops.global_variables() \
            else []
    return g, fetch, feed, init


def measure(name: str, profile: MachineProfile, repeat: int = 9) -> Row:
    """Predict, then measure, one case on this machine."""
    g, fetch, feed, init = _build(CASES[name])
    est = predict(fetch, feed, profile=profile, graph=g)
    measured = step_time(g, fetch, feed, init, repeat)
    return Row(name, len(est.run_metadata.placement), est.step_time_s, measured)


def validate(profile: MachineProfile | None = None, names: list[str] | None = None,
             repeat: int = 9, passes: int = 3, clock: str = "thread"
             ) -> tuple[MachineProfile, list[Row]]:
    """Every case's predicted and measured step time, in ``passes`` passes over the cases.

    Without a ``profile``, each pass first calibrates this machine, so a pass's predictions
    and measurements see the same load (the machine may be shared); each case reports the
    medians of its passes and the median of their errors, so a burst of load spoils one
    pass, not the case. Returns the last pass's profile and the rows."""
    use_clock(clock)
    names = list(names or CASES)
    runs, used = [], profile
    for _ in range(passes):
        used = profile or calibrate()
        runs.append([measure(n, used, repeat) for n in names])
    rows = []
    for i, name in enumerate(names):
        mine = [run[i] for run in runs]
        rows.append(Row(name, mine[0].ops, statistics.median(r.predicted_s for r in mine),
                        statistics.median(r.measured_s for r in mine),
                        statistics.median(r.error for r in mine)))
    return used, rows


def table(rows: list[Row]) -> str:
    """The validation table, with the median and worst absolute error."""
    lines = [f"{'graph':26s} {'ops':>4s} {'predicted us':>13s} {'measured us':>12s} "
             f"{'error':>7s}"]
    lines += [f"{r.name:26s} {r.ops:4d} {r.predicted_s * 1e6:13.1f} {r.measured_s * 1e6:12.1f} "
              f"{r.error * 100:+6.1f}%" for r in rows]
    errors = [abs(r.error) for r in rows]
    lines.append(f"median |error| {statistics.median(errors) * 100:.1f}%, worst "
                 f"{max(errors) * 100:.1f}% (goal: median <= 15%, worst <= 35%)")
    return "\n".join(lines)
