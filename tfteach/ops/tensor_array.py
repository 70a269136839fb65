"""``tf.TensorArray``: TF 1.x's graph-mode TensorArray over the ``TensorArrayV3`` ops.

A ``TensorArray`` is a value object: ``handle`` (the array the session makes when the
``TensorArrayV3`` op runs) and ``flow`` (the scalar that orders its ops). ``write`` and
``scatter``/``unstack`` return a new object with the new flow; reads take the current flow.
Copies made from one array share its inferred element shape (``_element_shape``: empty, or
one ``TensorShape`` merged with every value written), as TF's do, so ``infer_shape`` sees
the shapes written in a while loop's body. ``tf.while_loop`` carries a TensorArray as its
flow (``to_flows`` / ``from_flows``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.nest import flatten, pack
from tfteach.framework.tensor_shape import TensorShape, as_shape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of
from tfteach.ops.tensor_array_ops import grad_array, ta_op

__all__ = ["TensorArray", "to_flows", "from_flows", "holds_tensor_array"]


class TensorArray:
    """TF 1.x's ``tf.TensorArray`` (graph mode)."""

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: bool | None = None,
                 clear_after_read: bool | None = None, tensor_array_name: str | None = None,
                 handle: Tensor | None = None, flow: Tensor | None = None,
                 infer_shape: bool = True, element_shape: Any = None,
                 colocate_with_first_write_call: bool = True, name: str | None = None) -> None:
        self._dtype = dtypes.as_dtype(dtype)
        self._infer_shape = infer_shape
        self._element_shape = [] if element_shape is None else [as_shape(element_shape)]
        self._size, self._dynamic_size = size, bool(dynamic_size)
        if handle is not None:
            if flow is None:
                raise ValueError("flow must not be None if handle is not None.")
            self._handle, self._flow = handle, flow
            return
        if size is None:
            raise ValueError("Size must be provided if handle is not provided")
        g = graph_of([size])
        with g.as_default(), g.name_scope(name or "TensorArray") as scope:
            size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
            attrs = {"dtype": self._dtype,
                     "element_shape": as_shape(element_shape) if element_shape is not None
                     else unknown_shape(),
                     "dynamic_size": bool(dynamic_size),
                     "clear_after_read": True if clear_after_read is None else clear_after_read,
                     "identical_element_shapes": infer_shape,
                     "tensor_array_name": tensor_array_name or ""}
            op = ta_op("TensorArrayV3", [size_t], attrs, scope.rstrip("/") + "/")
        self._handle, self._flow = op.outputs

    # -- properties --------------------------------------------------------------------------
    @property
    def flow(self) -> Tensor:
        return self._flow

    @property
    def dtype(self) -> dtypes.DType:
        return self._dtype

    @property
    def handle(self) -> Tensor:
        return self._handle

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape[0] if self._element_shape else unknown_shape()

    def _with_flow(self, flow: Tensor) -> "TensorArray":
        ta = TensorArray(self._dtype, handle=self._handle, flow=flow,
                         infer_shape=self._infer_shape)
        ta._element_shape = self._element_shape
        ta._size, ta._dynamic_size = self._size, self._dynamic_size
        return ta

    def _merge_element_shape(self, shape: TensorShape) -> None:
        if not self._infer_shape:
            return
        if self._element_shape:
            if not shape.is_compatible_with(self._element_shape[0]):
                raise ValueError(f"Inconsistent shapes: saw {shape} but expected "
                                 f"{self._element_shape[0]} ")
            self._element_shape[0] = self._element_shape[0].merge_with(shape)
        else:
            self._element_shape.append(shape)

    def _value(self, value: Any) -> Tensor:
        t = value if isinstance(value, Tensor) else convert_to_tensor(
            value, dtype=self._dtype if not hasattr(value, "dtype") else None, name="value")
        if t.dtype is not self._dtype:
            raise errors.InvalidArgumentError(
                f"TensorArray dtype is {self._dtype.name} but Op is trying to write dtype "
                f"{t.dtype.name} ", hint=tr("write values of the TensorArray's dtype "
                                            "(tf.cast them first)."))
        return t

    # -- the API -----------------------------------------------------------------------------
    def identity(self) -> "TensorArray":
        return self._with_flow(array_ops.identity(self._flow))

    def grad(self, source: str, flow: Tensor | None = None,
             name: str | None = None) -> "TensorArray":
        g_handle, g_flow = grad_array(self._handle, self._flow if flow is None else flow)
        ta = TensorArray(self._dtype, handle=g_handle, flow=g_flow, infer_shape=self._infer_shape)
        ta._element_shape = self._element_shape
        return ta

    def _indexed(self, op_type: str, index: Any, arg: str, values: list, attrs: dict,
                 name: str | None) -> Any:
        """``op_type`` on (handle, index, *values, flow); a Python index becomes a Const
        under the op's name, as TF converts it."""
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or op_type) as scope:
            idx = convert_to_tensor(index, dtype=dtypes.int32, name=arg)
            return ta_op(op_type, [self._handle, idx, *values, self._flow], attrs, scope)

    def read(self, index: Any, name: str | None = None) -> Tensor:
        value = self._indexed("TensorArrayReadV3", index, "index", [], {"dtype": self._dtype},
                              name).outputs[0]
        if self._element_shape:
            value.set_shape(self._element_shape[0])
        return value

    def write(self, index: Any, value: Any, name: str | None = None) -> "TensorArray":
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArrayWrite"):
            t = self._value(value)
            self._merge_element_shape(t.shape)
            op = self._indexed("TensorArrayWriteV3", index, "index", [t], {"T": t.dtype}, None)
        return self._with_flow(op.outputs[0])

    def stack(self, name: str | None = None) -> Tensor:
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArrayStack"):
            value = self.gather(array_ops.range_(0, self.size()))
            n = self._static_size()
            if self._element_shape and self._element_shape[0].rank is not None and \
                    n is not None:
                value.set_shape(TensorShape([n] + list(self._element_shape[0].dims)))
            return value

    def _static_size(self) -> int | None:
        if self._dynamic_size or self._size is None:
            return None
        if isinstance(self._size, Tensor):
            value = const_value(self._size)
            return None if value is None else int(value)
        return int(self._size)

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        elem = self.element_shape
        value = self._indexed("TensorArrayGatherV3", indices, "indices", [],
                              {"dtype": self._dtype, "element_shape": elem}, name).outputs[0]
        if elem.rank is not None:
            value.set_shape(TensorShape([None] + list(elem.dims)))
        return value

    def unstack(self, value: Any, name: str | None = None) -> "TensorArray":
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArrayUnstack"):
            t = self._value(value)
            return self.scatter(array_ops.range_(0, array_ops.shape(t)[0]), t)

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> "TensorArray":
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArrayScatter"):
            t = self._value(value)
            if t.shape.rank:
                self._merge_element_shape(TensorShape(t.shape.dims[1:]))
            op = self._indexed("TensorArrayScatterV3", indices, "indices", [t], {"T": t.dtype},
                               None)
        return self._with_flow(op.outputs[0])

    def concat(self, name: str | None = None) -> Tensor:
        """Every element joined along its first axis (the elements may differ there)."""
        elem = self.element_shape
        rest = TensorShape(list(elem.dims[1:])) if elem.rank else unknown_shape()
        value = ta_op("TensorArrayConcatV3", [self._handle, self._flow],
                      {"dtype": self._dtype, "element_shape_except0": rest},
                      name or "TensorArrayConcatV3").outputs[0]
        if elem.rank:
            n = self._static_size() if self._infer_shape else None
            dim0 = n * elem.dims[0] if n is not None and elem.dims[0] is not None else None
            value.set_shape(TensorShape([dim0] + list(elem.dims[1:])))
        return value

    def split(self, value: Any, lengths: Any, name: str | None = None) -> "TensorArray":
        """Element ``i`` is the next ``lengths[i]`` rows of ``value``."""
        g = self._handle.graph
        with g.as_default(), g.name_scope(name or "TensorArraySplit"):
            t = self._value(value)
            lengths_64 = array_ops.cast(lengths, dtypes.int64)
            known = const_value(lengths) if isinstance(lengths, Tensor) else \
                np.asarray(lengths)
            if t.shape.rank and known is not None and known.size and \
                    known.max() == known.min():
                self._merge_element_shape(TensorShape([int(known[0])] + list(t.shape.dims[1:])))
            op = ta_op("TensorArraySplitV3", [self._handle, t, lengths_64, self._flow],
                       {"T": t.dtype}, "TensorArraySplitV3")
        return self._with_flow(op.outputs[0])

    def size(self, name: str | None = None) -> Tensor:
        if not self._dynamic_size and self._size is not None:
            return convert_to_tensor(self._size, dtype=dtypes.int32)
        return ta_op("TensorArraySizeV3", [self._handle, self._flow], {},
                     name or "TensorArraySizeV3").outputs[0]

    def close(self, name: str | None = None) -> Any:
        return ta_op("TensorArrayCloseV3", [self._handle], {},
                     name or "TensorArrayCloseV3")


# ---- while loops carry a TensorArray as its flow -------------------------------------------
def holds_tensor_array(structure: Any) -> bool:
    return any(isinstance(v, TensorArray) for v in flatten(structure))


def to_flows(structure: Any) -> Any:
    """``structure`` with each TensorArray replaced by its flow."""
    flat = flatten(structure)
    return pack(structure, [v.flow if isinstance(v, TensorArray) else v for v in flat])


def from_flows(template: Any, structure: Any) -> Any:
    """``structure`` (flows where ``template`` has TensorArrays) with TensorArrays back."""
    old = flatten(template)
    new = flatten(structure)
    return pack(template, [o._with_flow(n) if isinstance(o, TensorArray) else n
                           for o, n in zip(old, new, strict=True)])
