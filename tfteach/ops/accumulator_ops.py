"""Gradient accumulators: ``ConditionalAccumulator`` and ``SparseConditionalAccumulator``.

Shared resources like the queues of ``tfteach.ops.data_flow_ops`` (keyed by ``shared_name``
in the handle op's task and container, waiting ``take`` kernels that never hold a device
thread, released with their container). ``apply`` adds a gradient tagged with the local step
it was computed at, unless that step is older than the accumulator's ``global_step`` (a
stale gradient: dropped). ``take(n)`` waits for ``n`` accepted gradients, returns their
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
from tfteach.framework import dtypes as _dtypes
from tfteach.framework.graph import Operation, Tensor, get_default_graph
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tfteach.ops.array_ops import cast
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.data_flow_ops import (_HANDLE, _HANDLE_OP, _NO_OUTPUT, _USES_HANDLE, _Attempt,
                                       _handle_attrs, _host, _new_pending, _resolve_all,
                                       _start_waiting, _Waitable, shared_resource)

TakeGradient = collections.namedtuple("SparseAccumulatorTakeGradient",
                                      ["indices", "values", "shape"])


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
                hint="apply gradients of the variable's shape to its accumulator.")

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
        hint="apply IndexedSlices gradients of the accumulator's variable: rows of the "
             "variable's shape, indices within its first dimension.")


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
                hint="give one row of values per index.")
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


# ---- kernels ---------------------------------------------------------------------------------
def _accumulator(ctx: Any, cls: type, *args: Any) -> Any:
    """The ``cls`` resource of this handle op (made with ``name, *args`` on first use)."""
    a = ctx.attrs
    name = a["shared_name"] or ctx.op.name
    found = shared_resource(ctx.resources, "accumulator", name, lambda: cls(name, *args),
                            a["container"])
    if type(found) is not cls:
        raise errors.InvalidArgumentError(
            f"Accumulator '{name}' is a {found.op_type}, not a {cls.op_type}", op=ctx.op,
            hint="give each accumulator a shared_name of its own.")
    return found


def _accumulator_kernel(ctx: Any) -> AccumulatorResource:
    return _accumulator(ctx, AccumulatorResource, ctx.attrs["dtype"], ctx.attrs["shape"])


def _sparse_accumulator_kernel(ctx: Any) -> SparseAccumulatorResource:
    a = ctx.attrs
    return _accumulator(ctx, SparseAccumulatorResource, a["dtype"], a["shape"],
                        a["reduction_type"])


def _apply_grad_kernel(ctx: Any, accum: AccumulatorResource, local_step: Any,
                       grad: Any) -> np.ndarray:
    fresh = accum.apply(int(ctx.device.to_host(local_step)), _host(ctx, grad), ctx.op,
                        _caller(ctx))
    return np.array(fresh)


def _caller(ctx: Any) -> str:
    """The task running this step on a cluster ("" in a local session)."""
    return getattr(ctx.resources, "caller", "")


def _sparse_apply_kernel(ctx: Any, accum: SparseAccumulatorResource, local_step: Any,
                         indices: Any, values: Any, shape: Any) -> np.ndarray:
    known = _host(ctx, shape).tolist() if ctx.attrs["has_known_shape"] else None
    grad = (_host(ctx, indices).reshape(-1), _host(ctx, values), known)
    return np.array(accum.apply(int(ctx.device.to_host(local_step)), grad, ctx.op,
                                _caller(ctx)))


def _take_grad_kernel(ctx: Any, accum: AccumulatorResource, num_required: Any) -> Any:
    need = int(ctx.device.to_host(num_required))
    if need < 1:
        raise errors.InvalidArgumentError(
            f"Argument num_required must be positive, but was {need}", op=ctx.op,
            hint="take_grad(n) waits for n gradients; n must be at least 1.")
    attempt = _Attempt(_new_pending(), need, ctx.op.name)
    accum.taker, accum.need = _caller(ctx), need
    return _start_waiting(ctx, accum, attempt, accum.takers)


def _set_global_step_kernel(ctx: Any, accum: AccumulatorResource, step: Any) -> None:
    accum.set_global_step(int(ctx.device.to_host(step)))


def _cancel_takes_kernel(ctx: Any, accum: AccumulatorResource) -> None:
    accum.cancel_takers()


def _num_accumulated_kernel(ctx: Any, accum: AccumulatorResource) -> np.ndarray:
    return np.array(accum.num_accumulated(), dtype=np.int32)


def _sparse_take_shape(op: Operation) -> list:
    dims = _handle_attrs(op)["shape"].dims
    values = TensorShape([None] + list(dims[1:])) if dims else unknown_shape()
    return [(_dtypes.int64, TensorShape([None])), (op.attrs["dtype"], values),
            (_dtypes.int64, TensorShape([None]))]


_SCALAR = TensorShape([])
register_op("ConditionalAccumulator", lambda op: _HANDLE, _accumulator_kernel, **_HANDLE_OP)
register_op("SparseConditionalAccumulator", lambda op: _HANDLE, _sparse_accumulator_kernel,
            **_HANDLE_OP)
register_op("AccumulatorApplyGradient", lambda op: [(_dtypes.bool_, _SCALAR)],
            _apply_grad_kernel, **_USES_HANDLE)
register_op("SparseAccumulatorApplyGradient", lambda op: [(_dtypes.bool_, _SCALAR)],
            _sparse_apply_kernel, **_USES_HANDLE)
register_op("AccumulatorTakeGradient",
            lambda op: [(op.attrs["dtype"], _handle_attrs(op)["shape"])], _take_grad_kernel,
            is_async=True, **_USES_HANDLE)
register_op("SparseAccumulatorTakeGradient", _sparse_take_shape, _take_grad_kernel,
            is_async=True, **_USES_HANDLE)
register_op("AccumulatorSetGlobalStep", _NO_OUTPUT, _set_global_step_kernel, **_USES_HANDLE)
register_op("_AccumulatorCancelTakes", _NO_OUTPUT, _cancel_takes_kernel, **_USES_HANDLE)
register_op("AccumulatorNumAccumulated", lambda op: [(_dtypes.int32, _SCALAR)],
            _num_accumulated_kernel, **_USES_HANDLE)
not_differentiable("ConditionalAccumulator", "SparseConditionalAccumulator",
                   "AccumulatorApplyGradient", "SparseAccumulatorApplyGradient",
                   "AccumulatorTakeGradient", "SparseAccumulatorTakeGradient",
                   "AccumulatorSetGlobalStep", "AccumulatorNumAccumulated",
                   "_AccumulatorCancelTakes")


# ---- Python API ------------------------------------------------------------------------------
class ConditionalAccumulator:
    """``tf.ConditionalAccumulator(dtype, shape=None, shared_name=None)``.

    ``apply_grad(grad, local_step)`` adds a gradient unless ``local_step`` is older than the
    accumulator's global step (then it is dropped as stale); ``take_grad(n)`` waits for ``n``
    gradients, returns their average, resets, and advances the accumulator's step.
    (tfteach addition: the apply op's one output says whether the gradient was accepted.)
    """

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "conditional_accumulator", reduction_type: str = "MEAN") -> None:
        if reduction_type != "MEAN":
            raise ValueError(f"reduction_type {reduction_type!r} is not supported; "
                             "tfteach averages (reduction_type='MEAN').")
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape) if shape is not None else unknown_shape()
        self._accumulator_ref = get_default_graph().create_op("ConditionalAccumulator", [], {
            "dtype": self._dtype, "shape": self._shape, "container": "",
            "shared_name": shared_name or "", "reduction_type": reduction_type},
            name=name).outputs[0]
        self._name = self._accumulator_ref.op.name

    accumulator_ref = property(lambda self: self._accumulator_ref)
    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def _op(self, op_type: str, inputs: list, attrs: dict, name: str) -> Operation:
        g = self._accumulator_ref.graph
        return g.create_op(op_type, [self._accumulator_ref] + inputs, attrs, name=name)

    def _int64(self, value: Any, name: str) -> Tensor:
        g = self._accumulator_ref.graph
        with g.as_default():
            return cast(convert_to_tensor(value, name=name), _dtypes.int64)

    def apply_grad(self, grad: Any, local_step: Any = 0, name: str | None = None) -> Operation:
        g = graph_of([grad, self._accumulator_ref])
        with g.as_default():
            grad = convert_to_tensor(grad, dtype=self._dtype, name="grad")
        if not self._shape.is_compatible_with(grad.shape):
            raise ValueError(f"Shapes {grad.shape} and {self._shape} are incompatible.\n"
                             "Hint: apply gradients of the accumulator's shape.")
        step = self._int64(local_step, "local_step")
        return self._op("AccumulatorApplyGradient", [step, grad], {"dtype": self._dtype},
                        name or "AccumulatorApplyGradient")

    def take_grad(self, num_required: Any, name: str | None = None) -> Tensor:
        g = self._accumulator_ref.graph
        with g.as_default():
            n = convert_to_tensor(num_required, dtype=_dtypes.int32, name="num_required")
        return self._op("AccumulatorTakeGradient", [n], {"dtype": self._dtype},
                        name or "AccumulatorTakeGradient").outputs[0]

    def set_global_step(self, new_global_step: Any, name: str | None = None) -> Operation:
        step = self._int64(new_global_step, "new_global_step")
        return self._op("AccumulatorSetGlobalStep", [step], {}, name or "AccumulatorSetGlobalStep")

    def num_accumulated(self, name: str | None = None) -> Tensor:
        return self._op("AccumulatorNumAccumulated", [], {},
                        name or f"{self._name}_NumAccumulated").outputs[0]

    def cancel_waiting_takes(self, name: str | None = None) -> Operation:
        """tfteach addition: end waiting take_grads with CancelledError (what TF does to a
        session's pending steps when the session closes); the gradients stay."""
        return self._op("_AccumulatorCancelTakes", [], {}, name or "CancelTakes")


class SparseConditionalAccumulator(ConditionalAccumulator):
    """``tf.SparseConditionalAccumulator(dtype, shape=None, shared_name=None)``.

    ``apply_indexed_slices_grad(grad, local_step)`` adds an IndexedSlices gradient unless it is
    stale; ``take_indexed_slices_grad(n)`` waits for ``n`` gradients and returns their
    average as an IndexedSlices (see the module docstring for how rows are averaged).
    (tfteach addition: the apply op's one output says whether the gradient was accepted.)
    """

    def __init__(self, dtype: Any, shape: Any = None, shared_name: str | None = None,
                 name: str = "sparse_conditional_accumulator",
                 reduction_type: str = "MEAN") -> None:
        if reduction_type not in ("MEAN", "SUM"):
            raise ValueError(f"reduction_type must be 'MEAN' or 'SUM', got {reduction_type!r}")
        self._dtype = _dtypes.as_dtype(dtype)
        self._shape = as_shape(shape) if shape is not None else unknown_shape()
        self._accumulator_ref = get_default_graph().create_op("SparseConditionalAccumulator", [], {
            "dtype": self._dtype, "shape": self._shape, "container": "",
            "shared_name": shared_name or "", "reduction_type": reduction_type},
            name=name).outputs[0]
        self._name = self._accumulator_ref.op.name

    def apply_indexed_slices_grad(self, grad: IndexedSlices, local_step: Any = 0,
                                  name: str | None = None) -> Operation:
        return self.apply_grad(grad.indices, grad.values, grad.dense_shape, local_step, name)

    def apply_grad(self, grad_indices: Any, grad_values: Any, grad_shape: Any = None,
                   local_step: Any = 0, name: str | None = None) -> Operation:
        """Add the sparse gradient (indices, values, dense shape) unless it is stale."""
        g = graph_of([grad_values, grad_indices, self._accumulator_ref])
        with g.as_default():
            step = self._int64(local_step, "local_step")
            indices = cast(convert_to_tensor(grad_indices, name="grad_indices"), _dtypes.int64)
            values = convert_to_tensor(grad_values, dtype=self._dtype, name="grad_values")
            shape = self._int64([] if grad_shape is None else grad_shape, "grad_shape")
        return self._op("SparseAccumulatorApplyGradient", [step, indices, values, shape],
                        {"dtype": self._dtype, "has_known_shape": grad_shape is not None},
                        name or "SparseAccumulatorApplyGradient")

    def take_grad(self, num_required: Any, name: str | None = None) -> TakeGradient:
        """Wait for ``num_required`` gradients; (indices, values, shape) of their average."""
        g = self._accumulator_ref.graph
        with g.as_default():
            n = convert_to_tensor(num_required, dtype=_dtypes.int32, name="num_required")
        op = self._op("SparseAccumulatorTakeGradient", [n], {"dtype": self._dtype},
                      name or "SparseAccumulatorTakeGradient")
        return TakeGradient(*op.outputs)

    def take_indexed_slices_grad(self, num_required: Any,
                                 name: str | None = None) -> IndexedSlices:
        taken = self.take_grad(num_required, name)
        return IndexedSlices(taken.values, taken.indices, taken.shape)
