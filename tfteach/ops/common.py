"""Helpers shared by every op family: graph choice, tensor conversion, dtype and shape checks.

Kept tiny on purpose: each op family module registers its own ops; this module only holds
the rules they all follow (TF's no-implicit-promotion rule, TF's shape error text).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Graph, Operation, Tensor, get_default_graph
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.framework.tensor_shape import Dimension, TensorShape, broadcast_shapes
from tfteach.i18n import tr
from tfteach.ops.constant_op import constant

_conversion_hooks: list = []


def register_tensor_conversion(cls: type, fn: Any) -> None:
    """Let objects of ``cls`` (e.g. Variable) convert to tensors: ``fn(obj, dtype) -> Tensor``."""
    _conversion_hooks.append((cls, fn))


def graph_of(values: Sequence[Any]) -> Graph:
    """The graph that inputs live in (the default graph when none is a tensor)."""
    for v in values:
        if isinstance(v, IndexedSlices):
            return v.graph
        t = as_tensor_or_none(v)
        if t is not None:
            return t.graph
    return get_default_graph()


def create_op(op_type: str, inputs: list, attrs: dict, name: str | None) -> Operation:
    """An op of ``op_type`` in the graph its inputs live in (see ``graph_of``)."""
    return graph_of(inputs).create_op(op_type, inputs, attrs, name=name)


def as_tensor_or_none(value: Any) -> Tensor | None:
    if isinstance(value, Tensor):
        return value
    for cls, fn in _conversion_hooks:
        if isinstance(value, cls):
            return fn(value, None)
    return None


def convert_to_tensor(value: Any, dtype: Any = None, name: str | None = None,
                      graph: Graph | None = None) -> Tensor:
    """A Tensor for ``value``: tensors pass through, anything else becomes a ``Const``."""
    t = as_tensor_or_none(value)
    if t is not None:
        if dtype is not None and t.dtype is not dtypes.as_dtype(dtype):
            raise ValueError(f"Tensor conversion requested dtype {dtypes.as_dtype(dtype).name} "
                             f"for Tensor with dtype {t.dtype.name}: {t!r}")
        return t
    if isinstance(value, (list, tuple)) and holds_tensor(value):
        return _autopack(value, dtype, name or "packed", graph or graph_of(_flat(value)))
    if isinstance(value, Operation):
        raise TypeError(f"Can't convert Operation '{value.name}' to Tensor (target dtype="
                        f"{dtype}, name='{name}', as_ref=False)")
    if isinstance(value, (Dimension, TensorShape)):
        value, name = _shape_value(value), name or "shape_as_tensor"
    g = graph or get_default_graph()
    with g.as_default():
        return constant(value, dtype=dtype, name=name or "Const")


def _shape_value(value: Dimension | TensorShape) -> int | list:
    """A known Dimension's size, or a fully known TensorShape's sizes, as TF converts them."""
    if isinstance(value, Dimension):
        if value.value is None:
            raise ValueError(f"Cannot convert unknown Dimension {value} to a Tensor.")
        return value.value
    if not value.is_fully_defined():
        raise ValueError(f"Cannot convert a partially known TensorShape {value} to a Tensor.")
    return value.as_list()


def _flat(value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _flat(v)]
    return [value]


def holds_tensor(value: list | tuple) -> bool:
    """Whether (nested) list ``value`` holds a Tensor, so converting it packs it."""
    return any(isinstance(v, Tensor) for v in _flat(value))


def _autopack(value: list | tuple, dtype: Any, name: str, g: Graph) -> Tensor:
    """TF's autopacking: a list holding tensors (``[tf.shape(x)[0], 3]``) becomes a ``Pack``
    of its items, Python numbers as ``Const``s named by their index, in scope ``name``."""
    tensors = [v for v in _flat(value) if isinstance(v, Tensor)]
    dt = dtypes.as_dtype(dtype) if dtype is not None else tensors[0].dtype
    for t in tensors if dtype is None else ():
        if t.dtype is not dt:
            raise TypeError(f"Cannot convert a list containing a tensor of dtype "
                            f"<dtype: '{t.dtype.name}'> to <dtype: '{dt.name}'> (Tensor is: "
                            f"{t!r})")
    with g.as_default():
        value = _cast_items(value, dt, g)
        with g.name_scope(name) as scope:
            items = [v if isinstance(v, Tensor) else
                     _autopack(v, dt, str(i), g) if isinstance(v, (list, tuple)) else
                     constant(v, dtype=dt, name=str(i)) for i, v in enumerate(value)]
            return g.create_op("Pack", items, {"T": dt, "N": len(items), "axis": 0},
                               name=scope).outputs[0]


def _cast_items(value: Any, dt: dtypes.DType, g: Graph) -> Any:
    """The tensors of nested ``value`` cast to ``dt`` (TF's ``Cast`` ops, before the Pack)."""
    if isinstance(value, (list, tuple)):
        return [_cast_items(v, dt, g) for v in value]
    if isinstance(value, Tensor) and value.dtype is not dt:
        return g.create_op("Cast", [value], {"SrcT": value.dtype, "DstT": dt},
                           name="Cast").outputs[0]
    return value


def binary_inputs(op_type: str, x: Any, y: Any, names: tuple = ("x", "y")) -> tuple:
    """Convert two operands; a Python number adopts the other's dtype; mixing is a TypeError."""
    tx, ty = as_tensor_or_none(x), as_tensor_or_none(y)
    if tx is None and ty is None:
        tx = convert_to_tensor(x, name=names[0])
    g = (tx if tx is not None else ty).graph
    if tx is None:
        tx = convert_to_tensor(x, dtype=ty.dtype, name=names[0], graph=g)
    if ty is None:
        ty = convert_to_tensor(y, dtype=tx.dtype, name=names[1], graph=g)
    if tx.dtype is not ty.dtype:
        raise TypeError(with_hint(
            f"Input '{names[1]}' of '{op_type}' Op has type {ty.dtype.name} that does not "
            f"match type {tx.dtype.name} of argument '{names[0]}'.",
            tr("TensorFlow never converts types silently; use tf.cast(t, tf.{dtype}) on one "
               "side.", dtype=tx.dtype.name)))
    return tx, ty


def same_dtype(op_type: str, tensors: Sequence[Tensor], arg: str = "inputs") -> dtypes.DType:
    first = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not first:
            raise TypeError(f"Input '{arg}' of '{op_type}' Op has types "
                            f"[{', '.join(x.dtype.name for x in tensors)}] that don't all match.")
    return first


def shape_error(op: Operation, detail: str) -> ValueError:
    shapes = ", ".join(t.shape.bracket() for t in op.inputs)
    return ValueError(f"{detail} for '{op.name}' (op: '{op.type}') with input shapes: {shapes}.")


def broadcast_shape_fn(op: Operation) -> list:
    x, y = op.inputs
    out = broadcast_shapes(x.shape, y.shape)
    if out is None:
        a, b = _first_mismatch(x.shape, y.shape)
        raise shape_error(op, f"Dimensions must be equal, but are {a} and {b}")
    return [(x.dtype, out)]


def _first_mismatch(a: TensorShape, b: TensorShape) -> tuple:
    # strict=False: ranks may differ; the longer shape's extra leading axes broadcast.
    for x, y in zip(reversed(a.dims), reversed(b.dims), strict=False):
        if x is not None and y is not None and x != y and 1 not in (x, y):
            return x, y
    return None, None


def same_shape_fn(op: Operation) -> list:
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


def no_output_fn(op: Operation) -> list:
    return []


def const_value(t: Tensor) -> np.ndarray | None:
    """The value of a tensor produced by a Const op, else None (used by shape functions)."""
    if t.op.type == "Const":
        return t.op.attrs["value"]
    return None


def host_ints(ctx: Any, t: Any) -> list[int]:
    """A kernel's integer input (a vector or a scalar) as a list of Python ints on the host."""
    values = ctx.device.to_host(t).tolist()
    return values if isinstance(values, list) else [values]


def axis_list(axis: Any, rank: int | None) -> list[int] | None:
    """Normalise an axis (int, list or None = all) for a tensor of ``rank``."""
    if rank is None:
        return None
    if axis is None:
        return list(range(rank))
    axes = np.atleast_1d(np.asarray(axis)).tolist()
    return sorted({a + rank if a < 0 else a for a in axes})


def bad_index(indices: Any, limit: int, negatives_ok: bool = False) -> tuple | None:
    """(position text, value) of the first index outside ``[0, limit)``, or None.

    ``negatives_ok``: negative indices are allowed (UnsortedSegmentSum drops them)."""
    idx = np.asarray(indices)
    bad = idx >= limit if negatives_ok else (idx < 0) | (idx >= limit)
    if not bad.any():
        return None
    pos = np.unravel_index(int(np.argmax(bad)), idx.shape)
    return ",".join(str(int(p)) for p in pos), int(idx[pos])


def index_add(xp: Any, target: Any, indices: Any, updates: Any) -> None:
    """``target[indices] += updates`` in place; repeated indices add up (NumPy's ``add.at``)."""
    add_at = getattr(xp.add, "at", None)
    if add_at is not None:
        add_at(target, indices, updates)
    else:                               # older CuPy
        import cupyx  # only reached with CuPy arrays
        cupyx.scatter_add(target, indices, updates)
