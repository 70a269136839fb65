"""TF 1.x's TensorArray ops (the ``TensorArrayV3`` family) with their gradients.

``TensorArrayV3(size)`` makes a new array each time it runs and gives its ``handle`` and a
``flow`` (a float scalar with no meaning but order). Every op that changes the array takes
the flow in and gives a new one out (``TensorArrayWriteV3``, ``TensorArrayScatterV3``);
every op that reads it takes a flow in (``TensorArrayReadV3``, ``TensorArrayGatherV3``,
``TensorArrayConcatV3``, ``TensorArraySizeV3``; ``TensorArraySplitV3`` writes), so data
edges order the reads after the writes, also across a while loop's iterations, where the
flow is a loop variable and the handle a loop constant.

State per array (``ArrayState``, under its lock): ``values`` (index -> array), ``size``,
``element_shape`` (merged with every write while ``identical``), ``shapes`` (index ->
the shape written there, kept after a read clears it), ``cleared`` (indices read with
``clear_after_read``), ``grads`` (source -> the gradient array, made once by
``TensorArrayGradV3``). A gradient array adds writes to one index (TF's
``multiple_writes_aggregate``) and reads zeros where nothing was written: shaped as the
forward array's element there (TF's ``CopyShapesFrom``), or as a fully known element shape.

Gradients, as TF's ``tensor_array_grad``: a read writes its gradient into the gradient
array, a write reads it back; gather and scatter likewise. The gradient array is keyed by
the ``gradients`` scope of the ``tf.gradients`` call (``source``).
"""
from __future__ import annotations

import threading
from typing import Any

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.registry import ALL_TYPES, not_differentiable, register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.array_ops import identity
from tfteach.ops.common import create_op

__all__ = ["ArrayState", "ta_op", "grad_source"]

HANDLE = (dtypes.resource, TensorShape([2]))   # as TF types and shapes the handle
FLOW = (dtypes.float32, TensorShape([]))


class ArrayState:
    """One TensorArray's elements (see the module docstring)."""

    def __init__(self, name: str, size: int, dynamic: bool, clear: bool,
                 element_shape: TensorShape, aggregate: bool = False,
                 identical: bool = True) -> None:
        self.name, self.size, self.dynamic, self.clear = name, size, dynamic, clear
        self.element_shape, self.identical = element_shape, identical
        self.aggregate = aggregate
        self.values: dict[int, Any] = {}
        self.shapes: dict[int, tuple] = {}
        self.cleared: set[int] = set()
        self.grads: dict[str, ArrayState] = {}
        self.lock = threading.Lock()

    def write(self, index: int, value: Any, xp: Any) -> None:
        with self.lock:
            if index < 0 or (index >= self.size and not self.dynamic):
                raise _error(f"Tried to write to index {index} but array is not resizeable "
                             f"and size is: {self.size}",
                             tr("write only to indices 0 .. size-1, or make the TensorArray "
                                "with dynamic_size=True."))
            self._check_shape(index, value)
            self.size = max(self.size, index + 1)
            if index in self.values or index in self.cleared:
                if not self.aggregate:
                    raise _error(f"Could not write to TensorArray index {index} because it "
                                 "has already been written to.",
                                 tr("a TensorArray element is written once; use the array "
                                    "that write() returned, and a new index each time."))
                if index in self.values:
                    value = self.values[index] + value
            self.values[index] = value
            self.shapes[index] = tuple(value.shape)

    def _check_shape(self, index: int, value: Any) -> None:
        shape = TensorShape(list(value.shape))
        if not self.element_shape.is_compatible_with(shape):
            raise _error(f"Could not write to TensorArray index {index} because the value "
                         f"shape is {_dims(shape)} which is incompatible with the "
                         f"TensorArray's inferred element shape: {_dims(self.element_shape)} "
                         "(consider setting infer_shape=False).",
                         tr("every element of a TensorArray has the same shape, unless "
                            "it was made with infer_shape=False."))
        if self.identical:
            self.element_shape = self.element_shape.merge_with(shape)

    def read(self, index: int, dtype: Any, xp: Any) -> Any:
        with self.lock:
            if index < 0 or index >= self.size:
                raise _error(f"Tried to read from index {index} but array size is: "
                             f"{self.size}", tr("read only indices 0 .. size-1."))
            if index in self.cleared:
                raise _error(f"Could not read index {index} twice because it was cleared "
                             "after a previous read (perhaps try setting clear_after_read = "
                             "false?)", tr("a TensorArray forgets an element once it is "
                                           "read; make it with clear_after_read=False to "
                                           "read it again."))
            if index not in self.values:
                return self._unwritten(index, dtype, xp)
            value = self.values[index]
            if self.clear and not self.aggregate:
                del self.values[index]
                self.cleared.add(index)
            return value

    def _unwritten(self, index: int, dtype: Any, xp: Any) -> Any:
        if index in self.shapes:              # a gradient array: the forward element's shape
            return xp.zeros(self.shapes[index], dtype.np)
        if self.element_shape.is_fully_defined():
            return xp.zeros(self.element_shape.as_list(), dtype.np)
        raise _error(f"Could not read from TensorArray index {index}.  Furthermore, the "
                     "element shape is not fully defined: "
                     f"{_dims(self.element_shape)}.  It is possible you are working with a "
                     "resizeable TensorArray and stop_gradients is not allowing the gradients "
                     "to be written.  If you set the full element_shape property on the "
                     "forward TensorArray, the proper all-zeros tensor will be returned "
                     "instead of incurring this error.",
                     tr("write an element before reading it, or give the TensorArray a "
                        "full element_shape."))

    def grad(self, source: str) -> "ArrayState":
        with self.lock:
            found = self.grads.get(source)
            if found is None:
                found = self.grads[source] = ArrayState(
                    f"{self.name}@{source}", self.size, self.dynamic, False,
                    self.element_shape, aggregate=True, identical=self.identical)
                found.shapes = dict(self.shapes)
            return found


def _dims(shape: TensorShape) -> str:
    if shape.rank is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape.as_list()) + "]"


def _error(message: str, hint: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(message, hint=hint)


# ---- kernels -----------------------------------------------------------------------------------
def _host_int(ctx: Any, t: Any) -> int:
    return int(ctx.device.to_host(t))


def _host_ints(ctx: Any, t: Any) -> list[int]:
    return [int(v) for v in ctx.device.to_host(t).reshape(-1).tolist()]


def _flow(xp: Any) -> Any:
    return xp.zeros((), dtype="float32")


def _new_kernel(ctx: Any, size: Any) -> tuple:
    a = ctx.attrs
    state = ArrayState(a["tensor_array_name"] or ctx.op.name, _host_int(ctx, size),
                       a["dynamic_size"], a["clear_after_read"], as_shape(a["element_shape"]),
                       identical=a["identical_element_shapes"])
    return state, _flow(ctx.xp)


def _grad_kernel(ctx: Any, handle: ArrayState, flow: Any) -> tuple:
    return handle.grad(ctx.attrs["source"]), flow


def _write_kernel(ctx: Any, handle: ArrayState, index: Any, value: Any, flow: Any) -> Any:
    handle.write(_host_int(ctx, index), value, ctx.xp)
    return flow


def _read_kernel(ctx: Any, handle: ArrayState, index: Any, flow: Any) -> Any:
    return handle.read(_host_int(ctx, index), ctx.attrs["dtype"], ctx.xp)


def _gather_kernel(ctx: Any, handle: ArrayState, indices: Any, flow: Any) -> Any:
    dtype, xp = ctx.attrs["dtype"], ctx.xp
    items = [handle.read(i, dtype, xp) for i in _host_ints(ctx, indices)]
    if items:
        return xp.stack(items)
    shape = handle.element_shape.merge_with(as_shape(ctx.attrs["element_shape"]))
    if not shape.is_fully_defined():
        raise _error("TensorArray has size zero, but element shape "
                     f"{_dims(shape)} is not fully defined. Currently only static shapes "
                     "are supported when packing zero-size TensorArrays.",
                     tr("give the TensorArray a full element_shape to stack it empty."))
    return xp.zeros([0] + shape.as_list(), dtype.np)


def _scatter_kernel(ctx: Any, handle: ArrayState, indices: Any, value: Any, flow: Any) -> Any:
    idx = _host_ints(ctx, indices)
    if len(idx) != value.shape[0]:
        raise _error(f"Expected len(indices) == values.shape[0], but saw: {len(idx)} vs. "
                     f"{value.shape[0]}", tr("scatter one row of the value per index."))
    for k, i in enumerate(idx):
        handle.write(i, value[k], ctx.xp)
    return flow


def _concat_kernel(ctx: Any, handle: ArrayState, flow: Any) -> tuple:
    dtype, xp = ctx.attrs["dtype"], ctx.xp
    items = [handle.read(i, dtype, xp) for i in range(handle.size)]
    for i, item in enumerate(items):
        if item.ndim == 0:
            raise _error(f"Concat saw a scalar shape at index {i} but requires at least "
                         "vectors.", tr("concat joins elements along their first axis; "
                                        "use stack() for scalars."))
    lengths = xp.asarray([item.shape[0] for item in items], dtype="int64")
    if items:
        return xp.concatenate(items), lengths
    rest = as_shape(ctx.attrs["element_shape_except0"])
    if not rest.is_fully_defined():
        raise _error("TensorArray has size zero, but element_shape_except0 "
                     f"{_dims(rest)} is not fully defined. Currently only static shapes are "
                     "supported when concatenating zero-size TensorArrays.",
                     tr("give the TensorArray a full element_shape to concat it empty."))
    return xp.zeros([0] + rest.as_list(), dtype.np), lengths


def _split_kernel(ctx: Any, handle: ArrayState, value: Any, lengths: Any, flow: Any) -> Any:
    sizes = _host_ints(ctx, lengths)
    if value.ndim == 0 or sum(sizes) != value.shape[0]:
        raise _error(f"Expected sum of lengths to be equal to values.shape[0], but sum of "
                     f"lengths is {sum(sizes)} and value's shape is: "
                     f"{_dims(TensorShape(list(value.shape)))}",
                     tr("the lengths must add up to the value's first dimension."))
    start = 0
    for i, n in enumerate(sizes):
        handle.write(i, value[start:start + n], ctx.xp)
        start += n
    return flow


def _size_kernel(ctx: Any, handle: ArrayState, flow: Any) -> Any:
    return ctx.xp.asarray(handle.size, dtype="int32")


def _close_kernel(ctx: Any, handle: ArrayState) -> None:
    return None


# ---- shape functions ---------------------------------------------------------------------------
def _gather_shape(op: Operation) -> list:
    elem = as_shape(op.attrs["element_shape"])
    dims = None if elem.rank is None else [None] + list(elem.dims)
    return [(op.attrs["dtype"], TensorShape(dims) if dims is not None else unknown_shape())]


def _except0(shape: Any) -> TensorShape:
    rest = as_shape(shape)
    return unknown_shape() if rest.rank is None else TensorShape([None] + list(rest.dims))


_STATE = {"gpu_types": ALL_TYPES, "stateful": True, "dtype_attr": "dtype"}
register_op("TensorArrayV3", lambda op: [HANDLE, FLOW], _new_kernel, **_STATE)
register_op("TensorArrayGradV3", lambda op: [HANDLE, FLOW], _grad_kernel, **_STATE)
register_op("TensorArrayWriteV3", lambda op: [FLOW], _write_kernel, **{**_STATE, "dtype_attr": "T"})
register_op("TensorArrayReadV3",
            lambda op: [(op.attrs["dtype"], unknown_shape())], _read_kernel, **_STATE)
register_op("TensorArrayGatherV3", _gather_shape, _gather_kernel, **_STATE)
register_op("TensorArrayScatterV3", lambda op: [FLOW], _scatter_kernel,
            **{**_STATE, "dtype_attr": "T"})
register_op("TensorArrayConcatV3", lambda op: [
    (op.attrs["dtype"], _except0(op.attrs["element_shape_except0"])),
    (dtypes.int64, TensorShape([None]))], _concat_kernel, **_STATE)
register_op("TensorArraySplitV3", lambda op: [FLOW], _split_kernel,
            **{**_STATE, "dtype_attr": "T"})
register_op("TensorArraySizeV3", lambda op: [(dtypes.int32, TensorShape([]))], _size_kernel,
            **_STATE)
register_op("TensorArrayCloseV3", lambda op: [], _close_kernel, **_STATE)
not_differentiable("TensorArrayV3", "TensorArrayGradV3", "TensorArraySizeV3",
                   "TensorArrayCloseV3")


def ta_op(op_type: str, inputs: list, attrs: dict, name: str) -> Operation:
    """One TensorArray op (the ``TensorArray`` class and the gradients build them)."""
    return create_op(op_type, inputs, attrs, name)


# ---- gradients (TF's tensor_array_grad) ------------------------------------------------------
def grad_source(g: Any) -> str:
    """TF's ``_GetGradSource``: the ``gradients`` scope the gradient is built in."""
    parts = g.get_name_scope().split("/")
    found = [i for i, p in enumerate(parts) if p.startswith("gradients")]
    if not found:
        raise ValueError("Expected op/tensor name to start with gradients (excluding scope), "
                         f"got: {g.get_name_scope()}")
    return "/".join(parts[:found[-1] + 1])


def grad_array(handle: Tensor, flow: Tensor) -> tuple[Tensor, Tensor]:
    """The gradient array of ``handle`` for this ``tf.gradients`` call, and its flow."""
    g = handle.graph
    with g.name_scope("TensorArrayGrad"):
        op = ta_op("TensorArrayGradV3", [handle, flow], {"source": grad_source(g)},
                   "TensorArrayGradV3")
        with g.control_dependencies([op]):
            new_flow = identity(flow, name="gradient_flow")
    return op.outputs[0], new_flow


def _into_grad_array(op_type: str):
    """A read's (gather's) gradient: write (scatter) ``grad`` into the gradient array."""
    def grad_fn(op: Operation, grad: Tensor) -> list:
        handle, index, flow = op.inputs
        g_handle, g_flow = grad_array(handle, flow)
        w = ta_op(op_type, [g_handle, index, grad, g_flow], {"T": grad.dtype}, op_type)
        return [None, None, w.outputs[0]]
    return grad_fn


def _from_grad_array(op_type: str):
    """A write's (scatter's) gradient: read (gather) it back from the gradient array."""
    def grad_fn(op: Operation, flow: Tensor) -> list:
        handle, index, value, _ = op.inputs
        g_handle, g_flow = grad_array(handle, flow)
        attrs: dict = {"dtype": value.dtype}
        if op_type == "TensorArrayGatherV3":
            attrs["element_shape"] = TensorShape(value.shape.dims[1:]) if value.shape.rank \
                else unknown_shape()
        r = ta_op(op_type, [g_handle, index, g_flow], attrs, op_type).outputs[0]
        r.set_shape(value.shape)
        return [None, None, r, flow]
    return grad_fn


def _concat_grad(op: Operation, grad: Tensor, _lengths_grad: Any) -> list:
    """TF's _TensorArrayConcatGrad: split ``grad`` into the gradient array."""
    handle, flow = op.inputs
    g_handle, g_flow = grad_array(handle, flow)
    s = ta_op("TensorArraySplitV3", [g_handle, grad, op.outputs[1], g_flow], {"T": grad.dtype},
              "TensorArraySplitV3")
    return [None, s.outputs[0]]


def _split_grad(op: Operation, flow: Tensor) -> list:
    """TF's _TensorArraySplitGrad: concat the gradient array back."""
    handle, value, _, _ = op.inputs
    g_handle, g_flow = grad_array(handle, flow)
    rest = TensorShape(value.shape.dims[1:]) if value.shape.rank else unknown_shape()
    r = ta_op("TensorArrayConcatV3", [g_handle, g_flow],
              {"dtype": value.dtype, "element_shape_except0": rest},
              "TensorArrayConcatV3").outputs[0]
    r.set_shape(value.shape)
    return [None, r, None, flow]


set_gradient("TensorArrayConcatV3", _concat_grad)
set_gradient("TensorArraySplitV3", _split_grad)
set_gradient("TensorArrayReadV3", _into_grad_array("TensorArrayWriteV3"))
set_gradient("TensorArrayWriteV3", _from_grad_array("TensorArrayReadV3"))
set_gradient("TensorArrayGatherV3", _into_grad_array("TensorArrayScatterV3"))
set_gradient("TensorArrayScatterV3", _from_grad_array("TensorArrayGatherV3"))
