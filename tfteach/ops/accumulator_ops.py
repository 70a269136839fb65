"""Gradient accumulators: ``ConditionalAccumulator`` and ``SparseConditionalAccumulator``.

Shared resources like the queues of ``tfteach.ops.data_flow_ops`` (keyed by ``shared_name``
in the handle op's task and container, waiting ``take`` kernels that never hold a device
thread, released with their container). Their state and the rules it follows (stale
gradients, averages, the sparse merge) are in ``accumulator_resources``; this module holds
the kernels, the ops and the Python API.
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.i18n import tr
from tfteach.framework import dtypes as _dtypes
from tfteach.framework.graph import Operation, Tensor, get_default_graph
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tfteach.ops.accumulator_resources import AccumulatorResource, SparseAccumulatorResource
from tfteach.ops.array_ops import cast
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.data_flow_ops import (_HANDLE, _HANDLE_OP, _NO_OUTPUT, _USES_HANDLE, _Attempt,
                                       _handle_attrs, _host, _new_pending, _start_waiting,
                                       shared_resource)

TakeGradient = collections.namedtuple("SparseAccumulatorTakeGradient",
                                      ["indices", "values", "shape"])


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
            hint=tr("give each accumulator a shared_name of its own."))
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
            hint=tr("take_grad(n) waits for n gradients; n must be at least 1."))
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
            raise ValueError(errors.with_hint(
                f"Shapes {grad.shape} and {self._shape} are incompatible.",
                tr("apply gradients of the accumulator's shape.")))
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
    average as an IndexedSlices (``accumulator_resources`` says how rows are averaged).
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
