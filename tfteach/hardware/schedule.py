"""A deterministic discrete-event schedule: items on queues, dependencies honoured.

Each ``Item`` (an op, or a transfer) has a duration, the items it waits for (``preds``) and
the queues it occupies while it runs (``queues``: an op its device's; a transfer the
sending end's port and the receiving end's port of its link). A queue runs one item at a
time. The schedule is list scheduling in event order: of all items whose inputs are done, the
one that can start first (its inputs' end, and each of its queues free) starts next; ties go
to the item ready first, then to the lower index. So a queue never idles while an item for
it is ready, and the same items always give the same times (no clock is read).

State: ``pending`` (item -> unfinished preds), ``ready_at`` (item -> latest pred end),
``free`` (queue -> time it is free), ``waiting`` (queue tuple -> heap of (ready_at, item)).
"""
from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class Item:
    index: int
    name: str
    duration: float
    queues: tuple
    preds: list = field(default_factory=list)
    info: dict = field(default_factory=dict)    # what the caller needs to report it


def run(items: list[Item], t0: float = 0.0) -> tuple[list[float], list[float]]:
    """Start and end time of every item (seconds), every queue free from ``t0``."""
    n = len(items)
    pending = [0] * n
    consumers: list[list[int]] = [[] for _ in range(n)]
    for it in items:
        for p in set(it.preds):
            consumers[p].append(it.index)
            pending[it.index] += 1
    ready_at = [t0] * n
    free: dict = defaultdict(lambda: t0)
    waiting: dict[tuple, list] = defaultdict(list)
    for it in items:
        if pending[it.index] == 0:
            heapq.heappush(waiting[it.queues], (t0, it.index))
    start, end = [0.0] * n, [0.0] * n
    for _ in range(n):
        key = _next_queue(waiting, free)
        if key is None:
            raise ValueError("the items' dependencies form a cycle")
        ready, i = heapq.heappop(waiting[key])
        start[i] = max([ready] + [free[q] for q in key])
        end[i] = start[i] + items[i].duration
        for q in key:
            free[q] = end[i]
        for c in consumers[i]:
            ready_at[c] = max(ready_at[c], end[i])
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(waiting[items[c].queues], (ready_at[c], c))
    return start, end


def _next_queue(waiting: dict, free: dict) -> tuple | None:
    """The queue tuple whose first waiting item can start earliest."""
    best, best_key = None, None
    for key, heap in waiting.items():
        if heap:
            ready, i = heap[0]
            cand = (max([ready] + [free[q] for q in key]), ready, i)
            if best is None or cand < best:
                best, best_key = cand, key
    return best_key
