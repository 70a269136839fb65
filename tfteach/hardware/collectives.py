"""Collective communication: the textbook formulas, and a ring all-reduce built from ops.

- ``ring_allreduce_time(S, n, link)``: a ring all-reduce of S bytes over n devices is a
  reduce-scatter then an all-gather, each n - 1 steps in which every device sends one chunk
  of S / n bytes to its neighbour at once: ``2 (n - 1) / n * S / bandwidth`` plus
  ``2 (n - 1)`` latencies.
- ``parameter_server_time(S, n, link)``: n workers push S bytes each into one parameter
  server's link and pull S bytes back; the server's port carries the 2 n copies one after
  another, each ``latency + S / bandwidth`` (as ``predict`` models a port): ``2 n S /
  bandwidth`` plus ``2 n`` latencies.
- ``ring_allreduce(tensors, devices)`` builds that ring from ordinary ops (Split, Add,
  Identity, ConcatV2) with ``tf.device`` scopes, so ``predict`` (or a real session) runs it
  and its timeline shows each step's transfers.
"""
from __future__ import annotations

from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.hardware.profiles import LinkProfile
from tfteach.ops.array_ops import identity, reshape
from tfteach.ops.manip_ops import concat, split
from tfteach.ops.math_ops import add


def ring_allreduce_time(nbytes: float, n: int, link: LinkProfile) -> float:
    """Seconds for a ring all-reduce of ``nbytes`` over ``n`` devices joined by ``link``."""
    if n <= 1:
        return 0.0
    return 2 * (n - 1) / n * nbytes / link.bandwidth + 2 * (n - 1) * link.latency_s


def parameter_server_time(nbytes: float, n_workers: int, link: LinkProfile) -> float:
    """Seconds for ``n_workers`` to push ``nbytes`` each to one server and pull them back."""
    return 2 * n_workers * link.time(nbytes)


def ring_allreduce(tensors: list[Tensor], devices: list[str]) -> list[Tensor]:
    """The sum of ``tensors`` (one per device, same shape, size divisible by their number),
    one copy on each device, computed by a ring: reduce-scatter, then all-gather."""
    n = len(tensors)
    shape = tensors[0].shape
    chunks = []
    for i, (t, dev) in enumerate(zip(tensors, devices, strict=True)):
        with get_default_graph().device(dev):
            chunks.append(split(reshape(t, [-1]), n, name=f"ring_split_{i}"))
    chunks = [list(c) for c in chunks]
    for step in range(n - 1):            # reduce-scatter: device i ends with chunk i + 1
        chunks = _ring_step(chunks, devices, step, reduce=True)
    for step in range(n - 1):            # all-gather: pass the reduced chunks round
        chunks = _ring_step(chunks, devices, step - 1, reduce=False)
    out = []
    for i, dev in enumerate(devices):
        with get_default_graph().device(dev):
            out.append(reshape(concat(chunks[i], 0), shape.as_list(), name=f"ring_sum_{i}"))
    return out


def _ring_step(chunks: list[list], devices: list[str], step: int, reduce: bool) -> list[list]:
    """Every device i sends chunk (i - step) mod n to device i + 1 at once."""
    n = len(devices)
    new = [list(c) for c in chunks]
    for i in range(n):
        c, dst = (i - step) % n, (i + 1) % n
        with get_default_graph().device(devices[dst]):
            sent = chunks[i][c]
            new[dst][c] = add(chunks[dst][c], sent) if reduce else identity(sent)
    return new
