"""``tf.data`` transformations that reorder, cut or join streams without touching elements:
RepeatDataset, TakeDataset, SkipDataset, ShardDataset, ZipDataset, ConcatenateDataset,
CacheDataset and PrefetchDataset (the Python API is ``tfteach.ops.dataset_ops.Dataset``).

Each kernel gives a description (see ``dataset_ops``) whose ``elements(env)`` reads its input
streams lazily: ``repeat`` asks its input for a new stream per epoch (an empty input ends it),
``shard(n, i)`` keeps elements ``i, i + n, ...``, ``zip`` ends with its shortest input, a cache
keeps the first complete pass in memory and replays it, and ``prefetch`` gives elements as they
are asked for (no thread: nothing tfteach starts may keep a program from exiting).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr

_VARIANT = [(dtypes.variant, TensorShape([]))]


class _Repeat:
    def __init__(self, source: Any, count: int) -> None:
        self.source, self.count = source, count

    def elements(self, env: Any) -> Iterator[tuple]:
        epoch = 0
        while self.count < 0 or epoch < self.count:
            produced = False
            for element in self.source.elements(env):
                produced = True
                yield element
            epoch += 1
            if not produced:
                return


class _Every:
    """take(count), skip(count) and shard(num_shards, index): which positions to keep."""

    def __init__(self, source: Any, keep: Callable[[int], bool], stop: int | None) -> None:
        self.source, self.keep, self.stop = source, keep, stop

    def elements(self, env: Any) -> Iterator[tuple]:
        for i, element in enumerate(self.source.elements(env)):
            if self.stop is not None and i >= self.stop:
                return
            if self.keep(i):
                yield element


class _Zip:
    def __init__(self, sources: list) -> None:
        self.sources = sources

    def elements(self, env: Any) -> Iterator[tuple]:
        for parts in zip(*(s.elements(env) for s in self.sources), strict=False):
            yield tuple(c for part in parts for c in part)


class _Concatenate:
    def __init__(self, first: Any, second: Any) -> None:
        self.parts = (first, second)

    def elements(self, env: Any) -> Iterator[tuple]:
        for part in self.parts:
            yield from part.elements(env)


class _Cache:
    def __init__(self, source: Any) -> None:
        self.source = source
        self.kept: list | None = None

    def elements(self, env: Any) -> Iterator[tuple]:
        if self.kept is not None:
            yield from self.kept
            return
        seen = []
        for element in self.source.elements(env):
            seen.append(element)
            yield element
        self.kept = seen


def _scalar(ctx: Any, v: Any) -> int:
    return int(ctx.device.to_host(v))


def _take(ctx: Any, source: Any, count: Any) -> _Every:
    n = _scalar(ctx, count)
    return _Every(source, lambda i: True, None if n < 0 else n)


def _skip(ctx: Any, source: Any, count: Any) -> _Every:
    n = _scalar(ctx, count)
    return _Every(source, lambda i: n >= 0 and i >= n, None)


def _shard(ctx: Any, source: Any, num_shards: Any, index: Any) -> _Every:
    n, k = _scalar(ctx, num_shards), _scalar(ctx, index)
    if n <= 0 or not 0 <= k < n:
        raise errors.InvalidArgumentError(
            f"Index must be between 0 and {n - 1} (currently index = {k})." if n > 0 else
            f"Number of shards must be greater than zero (currently num_shards = {n}).",
            op=ctx.op, hint=tr("shard(num_workers, worker_index): the index counts from 0 "
                               "and is less than the number of shards."))
    return _Every(source, lambda i: i % n == k, None)


_KERNELS: dict[str, Callable] = {
    "RepeatDataset": lambda ctx, s, n: _Repeat(s, _scalar(ctx, n)),
    "TakeDataset": _take, "SkipDataset": _skip, "ShardDataset": _shard,
    "ZipDataset": lambda ctx, *sources: _Zip(list(sources)),
    "ConcatenateDataset": lambda ctx, a, b: _Concatenate(a, b),
    "CacheDataset": lambda ctx, s, name: _Cache(s),
    "PrefetchDataset": lambda ctx, s, n: s,
}
for _type, _kernel in _KERNELS.items():
    register_op(_type, lambda op: _VARIANT, _kernel, gpu_types=frozenset())
    not_differentiable(_type)
