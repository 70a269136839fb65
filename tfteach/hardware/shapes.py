"""Shapes for the cost model, without running the step.

The graph's static shapes often leave the batch unknown (``placeholder(float32, [None, 64])``).
``refine(ops, feeds)`` walks the ops a step needs in graph order and, for every output whose
static shape is partly unknown, runs the op's own shape function again on stand-ins for its
inputs that carry the shapes known so far (a fed tensor: its value's shape). Small integer
values that shape code depends on (``Shape``, ``Size``, ``Rank`` of a tensor of known shape,
and small constant expressions built from them, such as a gradient's
``BroadcastGradientArgs`` and ``Reshape(grad, Shape(x))``) are folded by running their
kernels on the CPU, so the stand-ins look like ``Const`` ops to the shape functions.

No kernel touches a tensor larger than ``FOLD_MAX_ELEMENTS``, and no stateful or waiting op is
folded, so nothing here has side effects or costs measurable time. A dimension still unknown
at the end counts as 1 and the tensor is listed in ``Shapes.unknown``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfteach.devices.base import CPUDevice
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.tensor_shape import TensorShape
from tfteach.runtime.plan import KernelContext

FOLD_MAX_ELEMENTS = 4096
_FOLD_DEVICE = CPUDevice(DeviceSpec("localhost", 0, 0, "CPU", 0), "shape folding", 1 << 30)


@dataclass
class Shapes:
    """Known shapes (tuples, ``None`` for an unknown dim) and small known values."""

    shapes: dict = field(default_factory=dict)    # Tensor -> tuple | None (unknown rank)
    values: dict = field(default_factory=dict)    # Tensor -> np.ndarray
    unknown: list = field(default_factory=list)   # names of tensors with unknown dims

    def concrete(self, t: Tensor) -> tuple:
        """``t``'s shape with unknown dims as 1 (an unknown rank as a scalar)."""
        dims = self.shapes.get(t, _static(t))
        if dims is None or any(d is None for d in dims):
            if t.name not in self.unknown:
                self.unknown.append(t.name)
            return tuple(1 if d is None else d for d in (dims or ()))
        return dims

    def nbytes(self, t: Tensor) -> int:
        return int(np.prod(self.concrete(t), dtype=np.int64)) * itemsize(t)


def itemsize(t: Tensor) -> int:
    """Bytes per element of ``t``'s dtype (8 for one without a NumPy type)."""
    try:
        return int(np.dtype(t.dtype.np).itemsize)
    except (TypeError, AttributeError):
        return 8


def _static(t: Tensor) -> tuple | None:
    dims = t.shape.dims
    return None if dims is None else tuple(dims)


class _ConstStandIn:
    """What a shape function sees as the op of a tensor whose value is known."""

    type = "Const"

    def __init__(self, real: Operation, value: np.ndarray) -> None:
        self._real, self.attrs = real, {"value": value}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _TensorStandIn:
    """A tensor with a refined shape (and maybe a known value); the rest is the real one's."""

    def __init__(self, real: Tensor, dims: tuple | None, value: np.ndarray | None) -> None:
        self._real, self.shape = real, TensorShape(None if dims is None else list(dims))
        self.op = real.op if value is None else _ConstStandIn(real.op, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _OpStandIn:
    def __init__(self, real: Operation, inputs: list) -> None:
        self._real, self.inputs = real, inputs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def refine(ops: list[Operation], feeds: dict) -> Shapes:
    """Shapes of every output of ``ops`` (in graph order), given feeds {Tensor: array}."""
    out = Shapes()
    for t, value in feeds.items():
        out.shapes[t] = tuple(np.shape(value))
        if np.size(value) <= FOLD_MAX_ELEMENTS and np.asarray(value).dtype.kind in "iub":
            out.values[t] = np.asarray(value)
    for op in ops:
        _refine_op(op, out)
    return out


def _refine_op(op: Operation, out: Shapes) -> None:
    todo = [t for t in op.outputs if t not in out.shapes]
    if not todo:
        return
    for t in todo:
        out.shapes[t] = _static(t)
    known = [out.shapes.get(t, _static(t)) for t in op.inputs]
    if any(d is None or None in d for d in (out.shapes[t] for t in todo)):
        _rerun_shape_fn(op, out)
    if op.type in ("Shape", "Size", "Rank") and known and _full(known[0]):
        out.values[op.outputs[0]] = _shape_value(op, known[0])
    elif all(t in out.values for t in op.inputs) and _foldable(op, out):
        _fold(op, out)


def _full(dims: tuple | None) -> bool:
    return dims is not None and all(d is not None for d in dims)


def _shape_value(op: Operation, dims: tuple) -> np.ndarray:
    value = {"Shape": dims, "Size": int(np.prod(dims, dtype=np.int64)), "Rank": len(dims)}
    return np.asarray(value[op.type], dtype=op.outputs[0].dtype.np)


def _rerun_shape_fn(op: Operation, out: Shapes) -> None:
    stand_ins = [_TensorStandIn(t, out.shapes.get(t, _static(t)), out.values.get(t))
                 for t in op.inputs]
    try:
        results = op.op_def.shape_fn(_OpStandIn(op, stand_ins))
    except Exception:  # noqa: BLE001 (a shape function that needs more: keep the static shape)
        return
    for t, (_, shape) in zip(op.outputs, results, strict=False):
        dims = TensorShape(shape).dims if not isinstance(shape, TensorShape) else shape.dims
        if dims is not None:
            merged = _static(t) or tuple(dims)
            out.shapes[t] = tuple(s if s is not None else d for s, d in
                                  zip(merged, dims, strict=False)) \
                if len(merged) == len(dims) else tuple(dims)


def _foldable(op: Operation, out: Shapes) -> bool:
    d = op.op_def
    if d.stateful or d.is_async or d.kernel is None or not op.outputs:
        return False
    small = [_full(out.shapes[t]) and np.prod(out.shapes[t]) <= FOLD_MAX_ELEMENTS
             for t in op.outputs]
    return all(small) and all(np.size(out.values[t]) <= FOLD_MAX_ELEMENTS for t in op.inputs)


def _fold(op: Operation, out: Shapes) -> None:
    try:
        result = op.op_def.kernel(KernelContext(op, _FOLD_DEVICE),
                                  *[out.values[t] for t in op.inputs])
    except Exception:  # noqa: BLE001 (a kernel that cannot fold: leave the value unknown)
        return
    results = result if len(op.outputs) > 1 else (result,)
    for t, v in zip(op.outputs, results, strict=False):
        v = np.asarray(v)
        out.values[t] = v
        out.shapes[t] = v.shape
