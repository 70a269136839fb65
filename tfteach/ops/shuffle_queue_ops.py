"""``tf.RandomShuffleQueue``: a queue whose dequeues take elements at random.

A ``FIFOQueueResource`` (``tfteach.ops.queue_ops``: waiting, closing, cancellation) that keeps
``min_after_dequeue`` elements while it is open, so what comes out is mixed: a dequeue of n
waits until n + min_after_dequeue elements are in. Once it is closed, the rest can be taken.
Its generator is seeded as TF's random ops are (``seed``/``seed2``; both 0: fresh entropy),
so two sessions with the same seeds give the same order (not TF's numbers).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.framework.graph import get_default_graph
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.ops.data_flow_ops import _HANDLE, _HANDLE_OP, shared_resource
from tfteach.ops.queue_ops import FIFOQueueResource, QueueBase, _as_list, types_and_shapes


class RandomShuffleQueueResource(FIFOQueueResource):
    """Dequeues take random elements, leaving ``min_after_dequeue`` while open."""

    KIND = "RandomShuffleQueue"

    def __init__(self, name: str, capacity: int, min_after_dequeue: int, seeds: tuple,
                 component_types: list, shapes: list) -> None:
        super().__init__(name, capacity, component_types, shapes)
        self.min_after_dequeue = min_after_dequeue
        self.rng = np.random.default_rng(list(seeds) if any(seeds) else None)

    def _ready(self) -> int:
        if self.closed:
            return len(self.items)
        return max(0, len(self.items) - self.min_after_dequeue)

    def _take(self, n: int) -> list:
        taken = []
        for _ in range(n):
            i = int(self.rng.integers(len(self.items)))
            self.items[i], self.items[-1] = self.items[-1], self.items[i]
            taken.append(self.items.pop())
        return taken


def _kernel(ctx: Any) -> RandomShuffleQueueResource:
    a = ctx.attrs
    name = a["shared_name"] or ctx.op.name
    queue = shared_resource(ctx.resources, "queue", name, lambda: RandomShuffleQueueResource(
        name, a["capacity"], a["min_after_dequeue"], (a["seed"], a["seed2"]),
        a["component_types"], a["shapes"]), a["container"])
    queue.check_compatible(a["component_types"], ctx.op)
    return queue


register_op("RandomShuffleQueueV2", lambda op: _HANDLE, _kernel, **_HANDLE_OP)
not_differentiable("RandomShuffleQueueV2")


class RandomShuffleQueue(QueueBase):
    """``tf.RandomShuffleQueue(capacity, min_after_dequeue, dtypes, shapes=None, names=None,
    seed=None, shared_name=None)``."""

    def __init__(self, capacity: int, min_after_dequeue: int, dtypes: Any, shapes: Any = None,
                 names: Any = None, seed: int | None = None, shared_name: str | None = None,
                 name: str = "random_shuffle_queue") -> None:
        from tfteach.ops.random_ops import get_seed
        types, shape_list = types_and_shapes(dtypes, shapes)
        s1, s2 = get_seed(seed)
        ref = get_default_graph().create_op("RandomShuffleQueueV2", [], {
            "component_types": types, "shapes": shape_list if shapes is not None else [],
            "capacity": int(capacity), "min_after_dequeue": int(min_after_dequeue),
            "seed": s1, "seed2": s2, "container": "", "shared_name": shared_name or ""},
            name=name).outputs[0]
        super().__init__(types, shape_list, _as_list(names) if names else None, ref)
