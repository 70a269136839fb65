"""Training-step benchmark: one SGD step of a 64-128-10 MLP on a batch of 128.

tfteach runs ``GradientDescentOptimizer(0.1).minimize(loss)`` (TF's default GATE_OP
gradients: forward, backward, updates, about 40 ops) against the same maths written by
hand in NumPy (forward, softmax cross-entropy, backward, in-place SGD updates), measured in
the same run. Both start from the same weights; the benchmark checks they stay equal.
Two placements of the graph: the default device (a virtual GPU, one BLAS thread, as a
learner's code gets it) and ``/cpu:0``; the NumPy baseline computes with the same number
of BLAS threads as the device, and rounds alternate so a busy machine slows both alike.
Goal: ratio <= 1.5. On a machine with CuPy and an NVIDIA GPU, the default device is that
real GPU, and its row shows what the GPU's kernel launches cost on so small a model (no goal).

Run: ``python benchmarks/bench_training.py`` (``--quick`` for fewer repetitions,
``--profile`` for a cProfile of the tfteach step).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from threadpoolctl import threadpool_limits

import tfteach as tf
from timing import interleaved

BATCH, IN, HIDDEN, OUT, LR = 128, 64, 128, 10, 0.1


def _data(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((BATCH, IN)).astype(np.float32),
            "y": rng.integers(0, OUT, BATCH).astype(np.int64),
            "w1": (rng.standard_normal((IN, HIDDEN)) * 0.1).astype(np.float32),
            "b1": np.zeros(HIDDEN, np.float32),
            "w2": (rng.standard_normal((HIDDEN, OUT)) * 0.1).astype(np.float32),
            "b2": np.zeros(OUT, np.float32)}


class NumpyMLP:
    """The same step by hand: what a learner would write in NumPy."""

    def __init__(self, d: dict) -> None:
        self.w1, self.b1 = d["w1"].copy(), d["b1"].copy()
        self.w2, self.b2 = d["w2"].copy(), d["b2"].copy()

    def step(self, x: np.ndarray, y: np.ndarray) -> None:
        h_pre = x @ self.w1 + self.b1
        h = np.maximum(h_pre, 0)
        logits = h @ self.w2 + self.b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        d_logits = probs
        d_logits[np.arange(len(y)), y] -= 1
        d_logits /= len(y)
        d_w2 = h.T @ d_logits
        d_b2 = d_logits.sum(axis=0)
        d_h = d_logits @ self.w2.T
        d_h *= h_pre > 0
        d_w1 = x.T @ d_h
        d_b1 = d_h.sum(axis=0)
        self.w1 -= LR * d_w1
        self.b1 -= LR * d_b1
        self.w2 -= LR * d_w2
        self.b2 -= LR * d_b2


def tfteach_mlp(d: dict, device: str | None):
    tf.reset_default_graph()
    with tf.device(device):
        x = tf.placeholder(tf.float32, [None, IN], name="x")
        y = tf.placeholder(tf.int64, [None], name="y")
        w1, b1 = tf.Variable(d["w1"], name="w1"), tf.Variable(d["b1"], name="b1")
        w2, b2 = tf.Variable(d["w2"], name="w2"), tf.Variable(d["b2"], name="b2")
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        logits = tf.matmul(h, w2) + b2
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                             logits=logits))
        train = tf.train.GradientDescentOptimizer(LR).minimize(loss)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess, train, {x: d["x"], y: d["y"]}, [w1, b1, w2, b2]


def compare(device: str | None, repeat: int) -> dict:
    """tfteach vs NumPy, NumPy with the BLAS threads of the device the graph runs on
    (a virtual GPU computes with one; /cpu:0 with the library default)."""
    d = _data()
    sess, train, feed, variables = tfteach_mlp(d, device)
    ref = NumpyMLP(d)
    for _ in range(3):
        sess.run(train, feed)
        ref.step(d["x"], d["y"])
    for got, want in zip(sess.run(variables), (ref.w1, ref.b1, ref.w2, ref.b2), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    plan = sess._plan([], [train], feed)
    one_thread = plan.uses_virtual_blas
    threads = 1 if one_thread else None
    t_tf, t_np, ratio = interleaved(lambda: sess.run(train, feed),
                                    lambda: ref.step(d["x"], d["y"]), repeat, inner=20,
                                    context_b=lambda: threadpool_limits(threads, user_api="blas"))
    sess.close()
    return {"tf_us": t_tf * 1e6, "np_us": t_np * 1e6, "ratio": ratio,
            "ops": len(plan.nodes), "blas": "1" if one_thread else "default"}


def profile() -> None:
    import cProfile
    import pstats
    d = _data()
    sess, train, feed, _ = tfteach_mlp(d, None)
    for _ in range(50):
        sess.run(train, feed)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        sess.run(train, feed)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(argv: list[str]) -> int:
    if "--profile" in argv:
        profile()
        return 0
    repeat = 5 if "--quick" in argv else 21
    print(f"One SGD step, {IN}-{HIDDEN}-{OUT} MLP, batch {BATCH} (median of {repeat} "
          "interleaved rounds of 20 steps; goal: ratio <= 1.5)")
    print(f"{'placement':26} {'nodes':>5} {'BLAS thr':>8} {'tfteach us':>11} {'numpy us':>9} "
          f"{'ratio':>6}")
    from tfteach.devices.gpu import gpu_count
    default = "default (real GPU:0)" if gpu_count() else "default (virtual GPU:0)"
    for label, device in ((default, None), ("/cpu:0", "/cpu:0")):
        r = compare(device, repeat)
        print(f"{label:26} {r['ops']:5d} {r['blas']:>8} {r['tf_us']:11.1f} "
              f"{r['np_us']:9.1f} {r['ratio']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
