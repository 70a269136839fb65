"""Batched diagonals of matrices, TF's V3 ops with the main diagonal (``k=0``; other
diagonals are UnimplementedError): MatrixDiagV3 (``tf.linalg.diag``: a batch of vectors
becomes a batch of diagonal matrices), MatrixDiagPartV3 (``tf.linalg.diag_part``) and
MatrixSetDiagV3 (``tf.linalg.set_diag``), each with TF's gradient; ``tf.eye`` is built on
them as TF builds it. No state.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of, shape_error
from tfteach.ops.manip_ops import concat
from tfteach.ops.math_ops import minimum

__all__ = ["eye", "matrix_diag", "matrix_diag_part", "matrix_set_diag"]


def _main_diagonal_only(op: Any, k: Any) -> None:
    if k is not None and np.any(np.asarray(k) != 0):
        raise errors.UnimplementedError(
            f"{op.type} '{op.name}': tfteach supports the main diagonal (k=0) only, got k="
            f"{np.asarray(k).tolist()}", op=op,
            hint=tr("use k=0 (the default), or build other diagonals with tf.pad."))


def _diag_shape(op: Any) -> list:
    d, k, rows, cols = op.inputs[:4]
    _main_diagonal_only(op, const_value(k))
    if d.shape.ndims is None:
        return [(d.dtype, unknown_shape())]
    if d.shape.ndims < 1:
        raise shape_error(op, "Shape must be at least rank 1 but is rank 0")
    n = d.shape.dims[-1]
    r, c = (const_value(t) for t in (rows, cols))
    r = None if r is None else (n if int(r) == -1 else int(r))
    c = None if c is None else (n if int(c) == -1 else int(c))
    return [(d.dtype, TensorShape(list(d.shape.dims[:-1]) + [r, c]))]


def _diag_kernel(ctx: Any, d: Any, k: Any, rows: Any, cols: Any, padding: Any) -> Any:
    _main_diagonal_only(ctx.op, ctx.device.to_host(k))
    n = d.shape[-1]
    r, c = (int(ctx.device.to_host(t)) for t in (rows, cols))
    r, c = n if r == -1 else r, n if c == -1 else c
    out = ctx.xp.full(d.shape[:-1] + (r, c), padding, dtype=d.dtype)
    m = min(r, c, n)
    out[..., ctx.xp.arange(m), ctx.xp.arange(m)] = d[..., :m]
    return out


def _diag_part_shape(op: Any) -> list:
    x, k = op.inputs[:2]
    _main_diagonal_only(op, const_value(k))
    if x.shape.ndims is None:
        return [(x.dtype, unknown_shape())]
    if x.shape.ndims < 2:
        raise shape_error(op, f"Shape must be at least rank 2 but is rank {x.shape.ndims}")
    r, c = x.shape.dims[-2:]
    m = None if r is None or c is None else min(r, c)
    return [(x.dtype, TensorShape(list(x.shape.dims[:-2]) + [m]))]


def _diag_part_kernel(ctx: Any, x: Any, k: Any, padding: Any) -> Any:
    _main_diagonal_only(ctx.op, ctx.device.to_host(k))
    return ctx.xp.diagonal(x, axis1=-2, axis2=-1).copy()


def _set_diag_shape(op: Any) -> list:
    _main_diagonal_only(op, const_value(op.inputs[2]))
    return [(op.inputs[0].dtype, op.inputs[0].shape)]


def _set_diag_kernel(ctx: Any, x: Any, d: Any, k: Any) -> Any:
    _main_diagonal_only(ctx.op, ctx.device.to_host(k))
    m = min(x.shape[-2:])
    if d.shape != x.shape[:-2] + (m,):
        raise errors.InvalidArgumentError(
            f"diagonal must have shape {list(x.shape[:-2]) + [m]}, got {list(d.shape)}",
            op=ctx.op, hint=tr("the new diagonal needs one value per row of each matrix."))
    out = x.copy()
    out[..., ctx.xp.arange(m), ctx.xp.arange(m)] = d
    return out


register_op("MatrixDiagV3", _diag_shape, _diag_kernel)
register_op("MatrixDiagPartV3", _diag_part_shape, _diag_part_kernel)
register_op("MatrixSetDiagV3", _set_diag_shape, _set_diag_kernel)


def _ints(g: Any, value: int, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=dtypes.int32, name=name)


def matrix_diag(diagonal: Any, name: str = "diag", k: int = 0, num_rows: int = -1,
                num_cols: int = -1, padding_value: Any = 0,
                align: str = "RIGHT_LEFT") -> Tensor:
    """A batch of diagonal matrices with ``diagonal``'s last dimension on their diagonals."""
    g = graph_of([diagonal])
    with g.as_default():
        d = convert_to_tensor(diagonal, name="diagonal")
        ins = [d, _ints(g, k, "k"), _ints(g, num_rows, "num_rows"),
               _ints(g, num_cols, "num_cols"),
               convert_to_tensor(padding_value, dtype=d.dtype, name="padding_value")]
        return g.create_op("MatrixDiagV3", ins, {"T": d.dtype, "align": align},
                           name=name).outputs[0]


def matrix_diag_part(input: Any, name: str = "diag_part", k: int = 0, padding_value: Any = 0,
                     align: str = "RIGHT_LEFT") -> Tensor:
    """The main diagonals of a batch of matrices."""
    g = graph_of([input])
    with g.as_default():
        x = convert_to_tensor(input, name="input")
        ins = [x, _ints(g, k, "k"),
               convert_to_tensor(padding_value, dtype=x.dtype, name="padding_value")]
        return g.create_op("MatrixDiagPartV3", ins, {"T": x.dtype, "align": align},
                           name=name).outputs[0]


def matrix_set_diag(input: Any, diagonal: Any, name: str = "set_diag", k: int = 0,
                    align: str = "RIGHT_LEFT") -> Tensor:
    """``input`` with its main diagonals replaced by ``diagonal``."""
    g = graph_of([input, diagonal])
    with g.as_default():
        x = convert_to_tensor(input, name="input")
        d = convert_to_tensor(diagonal, dtype=x.dtype, name="diagonal")
        return g.create_op("MatrixSetDiagV3", [x, d, _ints(g, k, "k")],
                           {"T": x.dtype, "align": align}, name=name).outputs[0]


def eye(num_rows: Any, num_columns: Any = None, batch_shape: Any = None,
        dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """Identity matrices (``num_rows`` x ``num_columns``, batched by ``batch_shape``); the
    sizes may be Python ints or int32 tensors (``tf.eye(tf.shape(x)[0])``)."""
    g = graph_of([num_rows, num_columns, batch_shape])
    with g.as_default(), g.name_scope(name or "eye"):
        square = num_columns is None
        cols = num_rows if square else num_columns
        batch = [] if batch_shape is None else batch_shape
        if isinstance(num_rows, Tensor) or isinstance(cols, Tensor) or \
                isinstance(batch, Tensor):
            return _dynamic_eye(num_rows, cols, batch, square, dtype)
        if not all(isinstance(v, (int, np.integer)) for v in (num_rows, cols)):
            raise TypeError(_eye_type_error(num_rows, cols))
        batch = [int(b) for b in batch]
        ones = array_ops.ones(batch + [min(num_rows, cols)], dtype=dtype)
        if num_rows == cols:
            return matrix_diag(ones)
        return matrix_set_diag(array_ops.zeros(batch + [num_rows, cols], dtype=dtype), ones)


def _dynamic_eye(rows: Any, cols: Any, batch: Any, square: bool, dtype: Any) -> Tensor:
    """TF's ``eye`` when a size is a tensor: the shapes are computed in the graph."""
    batch = convert_to_tensor(batch, dtype=dtypes.int32, name="shape")
    diag_size = rows if square else minimum(rows, cols)
    ones = array_ops.ones(concat([batch, [diag_size]], 0), dtype=dtype)
    if square:
        return matrix_diag(ones)
    shape = concat([batch, [rows, cols]], 0)
    return matrix_set_diag(array_ops.zeros(shape, dtype=dtype), ones)


def _eye_type_error(num_rows: Any, num_columns: Any) -> str:
    return errors.with_hint(
        "Arguments `num_rows` and `num_columns` must be positive integer values. Received: "
        f"num_rows={num_rows}, num_columns={num_columns}",
        tr("tf.eye takes whole numbers for its sizes: Python ints or int32 tensors."))


def _diag_grad(op: Any, grad: Tensor) -> list:
    return [matrix_diag_part(grad), None, None, None, None]


def _diag_part_grad(op: Any, grad: Tensor) -> list:
    x = op.inputs[0]
    return [matrix_set_diag(array_ops.zeros_like(x), grad), None, None]


def _set_diag_grad(op: Any, grad: Tensor) -> list:
    return [matrix_set_diag(grad, array_ops.zeros_like(op.inputs[1])),
            matrix_diag_part(grad), None]


set_gradient("MatrixDiagV3", _diag_grad)
set_gradient("MatrixDiagPartV3", _diag_part_grad)
set_gradient("MatrixSetDiagV3", _set_diag_grad)
