"""Convolution benchmark: ``tf.nn.conv2d`` forward, and forward + backward (the input and
filter gradients), on tfteach's CPU:0 against TensorFlow's CPU in the same run.

Two CIFAR-10-like layers, batch 32, 5x5 filters, SAME padding, stride 1: the first layer
(32x32x3 -> 64) and a middle one (16x16x64 -> 64). Both runtimes get the same inputs and
filters from placeholders fed with the same arrays; rounds alternate (``timing.interleaved``)
so a busy machine slows both alike, and the values are checked equal first.
Goal: ratio (tfteach / TensorFlow) <= 2. Without TensorFlow the TF columns say so and the
tfteach times are printed alone.

Run: ``python benchmarks/bench_conv.py`` (``--quick`` for fewer repetitions).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tfteach as tf  # noqa: E402
from timing import interleaved, per_call  # noqa: E402

BATCH = 32
LAYERS = {"conv1 32x32x3->64 5x5": (32, 3, 64), "conv2 16x16x64->64 5x5": (16, 64, 64)}


def _tensorflow():
    """TensorFlow's compat.v1 module, or None without TensorFlow."""
    try:
        import tensorflow.compat.v1 as tf1
    except ImportError:
        return None
    tf1.disable_v2_behavior()
    return tf1


def _arrays(size: int, depth: int, filters: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, size, size, depth)).astype(np.float32)
    w = (rng.standard_normal((5, 5, depth, filters)) * 0.05).astype(np.float32)
    return x, w


def _runner(mod, x: np.ndarray, w: np.ndarray, backward: bool):
    """A zero-argument callable that runs one step on ``mod`` (tfteach or TF), and the
    session (closed by the caller)."""
    graph = mod.Graph()
    with graph.as_default(), mod.device("/cpu:0"):
        xp = mod.placeholder(mod.float32, x.shape)
        wp = mod.placeholder(mod.float32, w.shape)
        y = mod.nn.conv2d(xp, wp, strides=[1, 1, 1, 1], padding="SAME")
        fetches = mod.gradients(y, [xp, wp]) if backward else y
    sess = mod.Session(graph=graph)
    feed = {xp: x, wp: w}
    return (lambda: sess.run(fetches, feed)), sess


def compare(name: str, backward: bool, tf1, repeat: int) -> dict:
    x, w = _arrays(*LAYERS[name])
    ours, our_sess = _runner(tf, x, w, backward)
    if tf1 is None:
        t_ours = min(per_call(ours, 3) for _ in range(repeat))
        our_sess.close()
        return {"ours_ms": t_ours * 1e3, "tf_ms": float("nan"), "ratio": float("nan")}
    theirs, their_sess = _runner(tf1, x, w, backward)
    for a, b in zip(np.atleast_1d(ours()) if not backward else ours(),
                    np.atleast_1d(theirs()) if not backward else theirs(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3)
    t_ours, t_tf, ratio = interleaved(ours, theirs, repeat, inner=3)
    our_sess.close()
    their_sess.close()
    return {"ours_ms": t_ours * 1e3, "tf_ms": t_tf * 1e3, "ratio": ratio}


def main(argv: list[str]) -> int:
    repeat = 3 if "--quick" in argv else 9
    tf1 = _tensorflow()
    print(f"tf.nn.conv2d on CPU:0, batch {BATCH}, SAME, stride 1 (median of {repeat} "
          "interleaved rounds of 3 steps; goal: ratio <= 2)")
    if tf1 is None:
        print("TensorFlow is not installed: tfteach times only.")
    print(f"{'layer':24} {'pass':18} {'tfteach ms':>10} {'TF ms':>8} {'ratio':>6}")
    for name in LAYERS:
        for backward in (False, True):
            r = compare(name, backward, tf1, repeat)
            label = "forward+backward" if backward else "forward"
            print(f"{name:24} {label:18} {r['ours_ms']:10.1f} {r['tf_ms']:8.1f} "
                  f"{r['ratio']:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
