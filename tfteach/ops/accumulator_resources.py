"""The state behind the gradient accumulators of ``accumulator_ops`` (TF's
ConditionalAccumulator and SparseConditionalAccumulator kernels).

``apply`` adds a gradient tagged with the local step it was computed at, unless that step is
older than the accumulator's ``global_step`` (a stale gradient: dropped). ``take(n)`` waits for ``n`` accepted gradients, returns their
average, resets and advances ``global_step``; ``set_global_step`` sets it (the chief's init).

The sparse one holds ``IndexedSlices``: ``indices`` (int64), ``values`` (one row per index)
and a count per row. A gradient is added as TF's kernel does: a merge walk over the held and
the new indices in their order; where the two current indices are equal the rows are summed
and the row's count goes up, otherwise the smaller index is copied (so sorted indices merge
into a sorted, duplicate-free union; unsorted or repeated indices can stay repeated, and an
optimizer's sparse update adds them up). ``take`` with ``reduction_type='MEAN'`` divides each
row by *its own* count (the number of gradients that had that row), not by the number of
gradients; its ``shape`` output is the accumulator's first dimension (-1 if unknown, as with
``shape=()`` in SyncReplicasOptimizer) followed by the values' other dimensions.

State: ``sum``, ``count``, ``global_step``, ``takers``, the totals ``accepted`` and
``dropped`` (and for the sparse one the held ``indices`` and ``counts``); changed only under
the resource's lock, Pendings resolved after it is released.
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.data_flow_ops import _resolve_all, _Waitable


# ---- the resources ---------------------------------------------------------------------------
class AccumulatorResource(_Waitable):
    """TF's ConditionalAccumulator: averages fresh gradients, drops stale ones."""

    op_type = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: Any, shape: TensorShape) -> None:
        super().__init__(name)
        self.dtype = dtype
        self.shape = shape
        self.sum: Any = None
        self.count = 0
        self.global_step = 0
        self.takers: collections.deque = collections.deque()
        self.accepted = 0
        self.dropped = 0
        self.senders: list[str] = []    # the tasks whose gradients ``count`` holds
        self.taker = ""                 # the task whose take_grad came last
        self.need = 0                   # how many gradients that take_grad needs

    def progress(self) -> dict[str, Any]:
        """Where the accumulator stands: its ``step``, the gradients it ``holds`` and their
        ``senders``, how many the last take_grad ``needs`` (0: none came yet), its task
        (``taker``) and whether a take_grad ``waits`` now."""
        with self.lock:
            return {"step": self.global_step, "holds": self.count, "needs": self.need,
                    "senders": list(self.senders), "taker": self.taker,
                    "waits": bool(self.takers)}

    def _lists(self) -> list:
        return [self.takers]

    def apply(self, local_step: int, grad: Any, op: Any, sender: str = "") -> bool:
        """Add ``grad`` (from task ``sender``) if ``local_step`` is not older than the
        accumulator's step."""
        with self.lock:
            self._validate(grad, op)
            fresh = local_step >= self.global_step
            if fresh:
                self._add(grad)
                self.count += 1
                self.accepted += 1
                self.senders.append(sender)
            else:
                self.dropped += 1
            done = self._progress()
        _resolve_all(done)
        return fresh

    def _validate(self, grad: Any, op: Any) -> None:
        if not self.shape.is_compatible_with(TensorShape(list(np.shape(grad)))):
            raise errors.InvalidArgumentError(
                f"Shape mismatch: expected shape {self.shape.bracket()} but got "
                f"{list(np.shape(grad))} for accumulator '{self.name}'", op=op,
                hint=tr("apply gradients of the variable's shape to its accumulator."))

    def _add(self, grad: Any) -> None:
        self.sum = np.array(grad, copy=True) if self.count == 0 else self.sum + grad

    def set_global_step(self, step: int) -> None:
        with self.lock:
            self.global_step = int(step)

    def cancel_takers(self) -> None:
        """End every waiting take_grad with CancelledError (its gradients stay)."""
        with self.lock:
            done = [(a, None, errors.CancelledError("TakeGrad operation was cancelled"))
                    for a in self.takers]
            for attempt in self.takers:
                attempt.finished = True
            self.takers.clear()
        _resolve_all(done)

    def num_accumulated(self) -> int:
        with self.lock:
            return self.count

    def _progress(self) -> list:
        if not self.takers or self.count < self.takers[0].need:
            return []
        attempt = self.takers.popleft()
        self.global_step += 1
        value = self._taken()
        self.sum, self.count, self.senders = None, 0, []
        attempt.finished = True
        return [(attempt, value, None)]

    def _taken(self) -> Any:
        """What a take returns (the average), before the state is reset (lock held)."""
        return (self.sum / self.count).astype(self.dtype.np)


def _mismatch(detail: str, op: Any) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(
        f"Shape mismatch: {detail}", op=op,
        hint=tr("apply IndexedSlices gradients of the accumulator's variable: rows of the "
                "variable's shape, indices within its first dimension."))


class SparseAccumulatorResource(AccumulatorResource):
    """The sparse sum behind a SparseConditionalAccumulator (see the module docstring)."""

    op_type = "SparseConditionalAccumulator"

    def __init__(self, name: str, dtype: Any, shape: TensorShape, reduction_type: str) -> None:
        super().__init__(name, dtype, shape)
        self.mean = reduction_type == "MEAN"
        self.indices: np.ndarray | None = None
        self.counts: np.ndarray | None = None

    def _validate(self, grad: Any, op: Any) -> None:
        """TF's checks of ``grad`` = (indices, values, dense shape or None), in TF's order
        and words."""
        indices, values, shape = grad
        if values.ndim == 0 or len(values) != len(indices):
            raise errors.InvalidArgumentError(
                f"Expected {len(indices)} non-empty input values, got "
                f"{len(values) if values.ndim else 0}", op=op,
                hint=tr("give one row of values per index."))
        mine = self.shape.dims
        if shape is not None and mine is not None:
            if len(mine) > len(shape):
                raise _mismatch(f"expected shape rank at least {len(mine)}, got {len(shape)}", op)
            for i, d in enumerate(mine):
                if d is not None and d != shape[i]:
                    raise _mismatch(f"expected shape dim {i} to be {d}, got {shape[i]}", op)
        if mine and mine[0] is not None:
            over = np.flatnonzero(indices >= mine[0])
            if over.size:
                raise _mismatch(f"index of slice {over[0]} exceeded limits of shape; index is "
                                f"{indices[over[0]]} exceeded {mine[0]}", op)
        self._validate_values(values, op)

    def _validate_values(self, values: np.ndarray, op: Any) -> None:
        if self.count > 0:
            held = self.sum.shape
            if len(held) != values.ndim:
                raise _mismatch(f"expected values rank {len(held)}, got {values.ndim}", op)
            expected = list(enumerate(held))[1:]
        else:
            mine = self.shape.dims or ()
            if len(mine) > values.ndim:
                raise _mismatch(f"expected values rank at least {len(mine)}, got "
                                f"{values.ndim}", op)
            expected = [(i, d) for i, d in enumerate(mine) if i > 0 and d is not None]
        for i, d in expected:
            if values.shape[i] != d:
                raise _mismatch(f"expected values dim {i} to be {d}, got {values.shape[i]}", op)

    def _add(self, grad: Any) -> None:
        indices, values, _ = grad
        if self.count == 0:
            self.indices, self.sum = indices.copy(), values.copy()
            self.counts = np.ones(len(indices), dtype=np.int64)
            return
        plan = np.array(_merge_plan(self.indices.tolist(), indices.tolist()),
                        dtype=np.int64).reshape(-1, 2)
        from_held, from_new = plan[:, 0], plan[:, 1]
        held, new = from_held >= 0, from_new >= 0
        rows = np.zeros((len(plan),) + values.shape[1:], dtype=values.dtype)
        rows[held] += self.sum[from_held[held]]
        rows[new] += values[from_new[new]]
        merged = np.empty(len(plan), dtype=np.int64)
        merged[held] = self.indices[from_held[held]]
        merged[~held] = indices[from_new[~held]]
        counts = np.zeros(len(plan), dtype=np.int64)
        counts[held] = self.counts[from_held[held]]
        self.indices, self.counts, self.sum = merged, counts + new, rows

    def _taken(self) -> tuple:
        values = self.sum
        if self.mean:
            values = values / self.counts.reshape((-1,) + (1,) * (values.ndim - 1))
        first = self.shape.dims[0] if self.shape.dims else None
        shape = np.array([-1 if first is None else first] + list(self.sum.shape[1:]),
                         dtype=np.int64)
        indices, self.indices, self.counts = self.indices.astype(np.int64), None, None
        return indices, values.astype(self.dtype.np), shape


def _merge_plan(held: list, new: list) -> list[tuple[int, int]]:
    """TF's merge walk: (position in held or -1, position in new or -1) per output row."""
    plan, i, j = [], 0, 0
    while i < len(held) and j < len(new):
        if held[i] < new[j]:
            plan.append((i, -1))
            i += 1
        elif held[i] == new[j]:
            plan.append((i, j))
            i, j = i + 1, j + 1
        else:
            plan.append((-1, j))
            j += 1
    plan += [(k, -1) for k in range(i, len(held))] + [(-1, k) for k in range(j, len(new))]
    return plan
