"""Shared timing for the benchmarks: paired, interleaved rounds.

This machine's speed drifts by tens of percent from second to second (other jobs, CPU
frequency), so a ratio is only honest when both sides see the same machine. Each round
times A then B back to back; the ratio reported is the median of the per-round ratios.
"""
from __future__ import annotations

import contextlib
import statistics
import time
from typing import Callable, ContextManager


def per_call(fn: Callable[[], object], inner: int,
             context: Callable[[], ContextManager] | None = None) -> float:
    """Seconds per call of ``fn`` over ``inner`` calls, inside ``context()`` if given."""
    with (context() if context else contextlib.nullcontext()):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        return (time.perf_counter() - t) / inner


def interleaved(fn_a: Callable[[], object], fn_b: Callable[[], object], repeat: int,
                inner: int = 1, context_b: Callable[[], ContextManager] | None = None
                ) -> tuple[float, float, float]:
    """Median seconds per call of a and of b, and the median of their per-round ratios."""
    per_call(fn_a, inner)
    per_call(fn_b, inner, context_b)
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(per_call(fn_a, inner))
        tb.append(per_call(fn_b, inner, context_b))
    ratio = statistics.median(a / b for a, b in zip(ta, tb, strict=True))
    return statistics.median(ta), statistics.median(tb), ratio
