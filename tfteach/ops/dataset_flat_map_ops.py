"""``Dataset.flat_map`` and ``Dataset.interleave``: a function maps each element to a dataset.

``FlatMapDataset`` chains those datasets: all of the first element's, then all of the
second's. ``InterleaveDataset`` keeps up to ``cycle_length`` of them open and takes
``block_length`` elements from each in turn, in TF's deterministic order: a slot whose
dataset ends is refilled from the next input element at once, in the same turn, and the
output ends when the input and every open dataset have ended. ``cycle_length`` AUTOTUNE
(-1) is the number of CPU cores this process may use, as in TF. The ``Dataset`` methods
that build these ops are in ``dataset_ops``; the functions are traced as ``map``'s are.
"""
from __future__ import annotations

import os
from typing import Any, Iterator

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.dataset_functions import lookup

_VARIANT = [(dtypes.variant, TensorShape([]))]


class _FlatMap:
    def __init__(self, source: Any, func: Any, captured: list) -> None:
        self.source, self.func, self.captured = source, func, captured

    def inner(self, env: Any, element: tuple) -> Iterator[tuple]:
        """The elements of the dataset the function makes of ``element``."""
        return self.func.call(env, element, self.captured)[0].elements(env)

    def elements(self, env: Any) -> Iterator[tuple]:
        for element in self.source.elements(env):
            yield from self.inner(env, element)


class _Interleave(_FlatMap):
    def __init__(self, source: Any, func: Any, captured: list, cycle: int, block: int) -> None:
        super().__init__(source, func, captured)
        self.cycle, self.block = cycle, block

    def elements(self, env: Any) -> Iterator[tuple]:
        inputs = iter(self.source.elements(env))
        slots: list[Iterator[tuple] | None] = [None] * self.cycle
        index, taken, open_count, input_done = 0, 0, 0, False
        while not input_done or open_count:
            if slots[index] is not None:
                element = next(slots[index], None)
                if element is not None:
                    yield element
                    taken += 1
                    if taken < self.block:
                        continue
                else:
                    slots[index], open_count = None, open_count - 1
            elif not input_done:
                source_element = next(inputs, None)
                input_done = source_element is None
                if not input_done:
                    slots[index], open_count = self.inner(env, source_element), open_count + 1
                continue
            index, taken = (index + 1) % self.cycle, 0


def _flat_map_kernel(ctx: Any, source: Any, *captured: Any) -> _FlatMap:
    return _FlatMap(source, lookup(ctx.op.graph, ctx.attrs["f"], ctx.attrs["f_def"]),
                    list(captured))


def _positive(ctx: Any, value: Any, what: str) -> int:
    n = int(ctx.device.to_host(value))
    if what == "cycle_length" and n == -1:          # AUTOTUNE
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count() or 1
    if n <= 0:
        raise errors.InvalidArgumentError(f"{what} must be greater than zero.", op=ctx.op,
                                          hint=tr("give interleave() a {what} of 1 or more.",
                                                  what=what))
    return n


def _interleave_kernel(ctx: Any, source: Any, *rest: Any) -> _Interleave:
    *captured, cycle, block = rest
    func = lookup(ctx.op.graph, ctx.attrs["f"], ctx.attrs["f_def"])
    return _Interleave(source, func, captured, _positive(ctx, cycle, "cycle_length"),
                       _positive(ctx, block, "block_length"))


for _type, _kernel in (("FlatMapDataset", _flat_map_kernel),
                       ("InterleaveDataset", _interleave_kernel)):
    register_op(_type, lambda op: _VARIANT, _kernel, gpu_types=frozenset(), cheap=True)
    not_differentiable(_type)
