"""Core engine benchmarks, each as a ratio against a baseline measured in this run.

1. Per-op overhead: a chain of 1000 scalar adds fed by a placeholder (goal: median <= 10 us
   per op; TF's C++ executor ~0.4 us, Dask's threaded scheduler ~200 us). Baseline: the same
   1000 adds as a plain Python loop over NumPy scalars.
2. Eight independent 512x512 matmuls + add_n on CPU:0 against NumPy doing the same work
   (goal: ratio <= 1.15).
3. The same work split over two virtual GPUs against one virtual GPU (goal: <= 0.7x). Each
   virtual GPU computes with one core, so two of them use both cores of this machine.
   Real GPUs replace virtual ones: on a machine with CuPy and an NVIDIA GPU this row is
   skipped, and another compares the work on the real GPU:0 with NumPy (no goal: it shows
   what the GPU adds to so small a product).

Run: ``python benchmarks/bench_core.py`` (add ``--quick`` for fewer repetitions).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tfteach as tf  # noqa: E402
from tfteach import config  # noqa: E402
from tfteach.devices.gpu import gpu_count  # noqa: E402
from timing import interleaved  # noqa: E402


def per_op_overhead(repeat: int) -> dict:
    tf.reset_default_graph()
    x = tf.placeholder(tf.float32, [])
    y = x
    for _ in range(1000):
        y = y + 1.0
    sess = tf.Session()

    def numpy_chain():
        v = np.float32(1.0)
        one = np.float32(1.0)
        for _ in range(1000):
            v = v + one
        return v
    t_tf, t_np, _ = interleaved(lambda: sess.run(y, {x: 1.0}), numpy_chain, repeat)
    return {"us_per_op": t_tf / 1000 * 1e6, "numpy_us_per_op": t_np / 1000 * 1e6,
            "goal_us": 10.0}


def _matmul_graph(devices: list[str], n: int = 8, size: int = 512):
    tf.reset_default_graph()
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal((size, size)).astype(np.float32) for _ in range(2 * n)]
    products = []
    for i in range(n):
        with tf.device(devices[i % len(devices)]):
            a = tf.constant(mats[2 * i])
            b = tf.constant(mats[2 * i + 1])
            products.append(tf.matmul(a, b))
    with tf.device(devices[0]):
        total = tf.add_n(products)
    return total, mats


def matmuls_vs_numpy(repeat: int, device: str = "/cpu:0") -> dict:
    total, mats = _matmul_graph([device])
    sess = tf.Session()

    def numpy_work():
        out = mats[0] @ mats[1]
        for i in range(1, 8):
            out = out + mats[2 * i] @ mats[2 * i + 1]
        return out
    t_tf, t_np, ratio = interleaved(lambda: sess.run(total), numpy_work, repeat)
    np.testing.assert_allclose(sess.run(total), numpy_work(), rtol=1e-3, atol=1e-2)
    return {"tfteach_ms": t_tf * 1e3, "numpy_ms": t_np * 1e3, "ratio": ratio, "goal": 1.15}


def two_virtual_gpus_vs_one(repeat: int) -> dict:
    config.set_virtual_gpus(2)
    one, _ = _matmul_graph(["/gpu:0"])
    s1 = tf.Session(graph=one.graph)
    two, _ = _matmul_graph(["/gpu:0", "/gpu:1"])
    s2 = tf.Session(graph=two.graph)
    t2, t1, ratio = interleaved(lambda: s2.run(two), lambda: s1.run(one), repeat)
    config.reset_virtual_gpus()
    return {"one_gpu_ms": t1 * 1e3, "two_gpus_ms": t2 * 1e3, "ratio": ratio, "goal": 0.7}


def main(argv: list[str]) -> int:
    repeat = 5 if "--quick" in argv else 21
    op = per_op_overhead(repeat)
    mm = matmuls_vs_numpy(repeat)
    real_gpus = gpu_count()
    vg = None if real_gpus else two_virtual_gpus_vs_one(repeat)
    gm = matmuls_vs_numpy(repeat, "/gpu:0") if real_gpus else None
    print(f"tfteach core benchmarks (medians of {repeat} interleaved rounds; ratio: median "
          "of the per-round ratios)")
    print(f"{'benchmark':44} {'tfteach':>12} {'baseline':>12} {'ratio':>7} {'goal':>8}")
    print(f"{'per-op overhead, 1000-op scalar chain (us/op)':44} {op['us_per_op']:12.2f} "
          f"{op['numpy_us_per_op']:12.2f} {op['us_per_op'] / op['numpy_us_per_op']:7.1f} "
          f"{'<=10us':>8}")
    print(f"{'8x matmul 512 + add_n on CPU:0 vs NumPy (ms)':44} {mm['tfteach_ms']:12.2f} "
          f"{mm['numpy_ms']:12.2f} {mm['ratio']:7.2f} {'<=1.15':>8}")
    if vg is not None:
        print(f"{'same work on 2 virtual GPUs vs 1 (ms)':44} {vg['two_gpus_ms']:12.2f} "
              f"{vg['one_gpu_ms']:12.2f} {vg['ratio']:7.2f} {'<=0.70':>8}")
    else:
        print(f"{'same work on 2 virtual GPUs vs 1':44} skipped: {real_gpus} real GPU(s) "
              "replace virtual ones here")
        print(f"{'8x matmul 512 + add_n on real GPU:0 vs NumPy (ms)':44} "
              f"{gm['tfteach_ms']:12.2f} {gm['numpy_ms']:12.2f} {gm['ratio']:7.2f} "
              f"{'-':>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
