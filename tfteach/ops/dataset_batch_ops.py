"""``tf.data`` batching: BatchDatasetV2 (``Dataset.batch``) and PaddedBatchDatasetV2
(``Dataset.padded_batch``); the Python API is ``tfteach.ops.dataset_ops.Dataset``.

A batch stacks ``batch_size`` consecutive elements, component by component; the last, smaller
batch is kept unless ``drop_remainder``. ``batch`` needs every element of a component to have
one shape; ``padded_batch`` pads each component to its padded shape (a dimension of -1: the
largest in the batch) with its padding value.
"""
from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr


class _Batch:
    def __init__(self, source: Any, size: int, drop: bool, op: Any,
                 padding: list | None = None) -> None:
        self.source, self.size, self.drop, self.op = source, size, drop, op
        self.padding = padding          # [(padded shape, padding value)] per component

    def elements(self, env: Any) -> Iterator[tuple]:
        batch: list = []
        for element in self.source.elements(env):
            batch.append(element)
            if len(batch) == self.size:
                yield self._stack(batch)
                batch = []
        if batch and not self.drop:
            yield self._stack(batch)

    def _stack(self, batch: list) -> tuple:
        if self.padding is not None:
            return tuple(self._padded([e[c] for e in batch], *self.padding[c])
                         for c in range(len(batch[0])))
        for c in range(len(batch[0])):
            for i, element in enumerate(batch[1:], start=1):
                if np.shape(element[c]) != np.shape(batch[0][c]):
                    raise errors.InvalidArgumentError(
                        f"Cannot batch tensors with different shapes in component {c}. First "
                        f"element had shape {list(np.shape(batch[0][c]))} and element {i} had "
                        f"shape {list(np.shape(element[c]))}.", op=self.op,
                        hint=tr("batch stacks elements of one shape; use padded_batch, or "
                                "resize or pad them in map first."))
        return tuple(np.stack([e[c] for e in batch]) for c in range(len(batch[0])))

    def _padded(self, parts: list, shape: np.ndarray, value: Any) -> np.ndarray:
        parts = [np.asarray(p) for p in parts]
        if any(p.ndim != len(shape) for p in parts):
            raise errors.InvalidArgumentError(
                f"All elements in a batch must have the same rank as the padded shape for "
                f"component: expected rank {len(shape)} but got element with rank "
                f"{next(p.ndim for p in parts if p.ndim != len(shape))}", op=self.op,
                hint=tr("give padded_shapes one entry per dimension of each component."))
        most = np.max([p.shape for p in parts], axis=0) if len(shape) else np.zeros(0, int)
        dims = [int(m) if s < 0 else int(s) for s, m in zip(shape, most, strict=True)]
        if any(d < m for d, m in zip(dims, most, strict=True)):
            raise errors.InvalidArgumentError(
                "Attempted to pad to a smaller size than the input element.", op=self.op,
                hint=tr("make padded_shapes at least as large as the largest element, or -1 "
                        "to pad to the batch's largest."))
        out = np.full([len(parts)] + dims, value, dtype=parts[0].dtype)
        for i, p in enumerate(parts):
            out[(i,) + tuple(slice(0, d) for d in p.shape)] = p
        return out


def _size(ctx: Any, size: Any) -> int:
    n = int(ctx.device.to_host(size))
    if n <= 0:
        raise errors.InvalidArgumentError("Batch size must be greater than zero.", op=ctx.op,
                                          hint=tr("give batch() a batch size of 1 or more."))
    return n


def _batch_kernel(ctx: Any, source: Any, size: Any, drop: Any) -> _Batch:
    return _Batch(source, _size(ctx, size), bool(ctx.device.to_host(drop)), ctx.op)


def _padded_kernel(ctx: Any, source: Any, size: Any, *rest: Any) -> _Batch:
    n = (len(rest) - 1) // 2
    shapes = [np.asarray(ctx.device.to_host(s)).astype(np.int64) for s in rest[:n]]
    values = [np.asarray(ctx.device.to_host(v)).item() for v in rest[n:2 * n]]
    return _Batch(source, _size(ctx, size), bool(ctx.device.to_host(rest[-1])), ctx.op,
                  list(zip(shapes, values, strict=True)))


for _type, _kernel in {"BatchDatasetV2": _batch_kernel,
                       "PaddedBatchDatasetV2": _padded_kernel}.items():
    register_op(_type, lambda op: [(dtypes.variant, TensorShape([]))], _kernel,
                gpu_types=frozenset())
    not_differentiable(_type)
