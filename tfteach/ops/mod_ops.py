"""Division with a remainder: ``FloorDiv`` (``a // b``), ``FloorMod`` (``a % b``,
``tf.mod``, ``tf.floormod``) and ``TruncateMod`` (``tf.truncatemod``).

As in TF, ``FloorMod`` rounds the quotient down, so the remainder takes the divisor's sign
(``-7 % 3 == 2``, Python's rule); ``TruncateMod`` rounds it towards zero, so the remainder
takes the dividend's sign (``truncatemod(-7, 3) == -1``, C's ``fmod``). Floats divided by 0
give NaN; integers divided by 0 fail at run time with TF's errors. Gradients as TF's:
FloorDiv has none, FloorMod's is ``(g, -g * floordiv(x, y))``, TruncateMod has none
registered (``tf.gradients`` through it is a LookupError).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, register_operator
from tfteach.framework.registry import not_differentiable, register_op, set_gradient
from tfteach.i18n import tr
from tfteach.ops.common import binary_inputs, broadcast_shape_fn, graph_of
from tfteach.ops.math_grad import sum_to
from tfteach.ops.math_ops import negative

__all__ = ["floordiv", "floormod", "mod", "truncatemod"]

_ALLOWED = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
            dtypes.uint32, dtypes.uint64, dtypes.bfloat16, dtypes.float16, dtypes.float32,
            dtypes.float64)


def _checked(fn: Callable, by_zero: type, message: str) -> Callable:
    """A kernel that computes ``fn`` and fails as TF does when an integer divisor is 0."""
    def kernel(ctx: Any, x: Any, y: Any) -> Any:
        if y.dtype.kind in "iu" and bool((y == 0).any()):
            raise by_zero(message, op=ctx.op, hint=tr(
                "an integer division or remainder by 0 has no value: make sure the divisor "
                "of {name} is never 0 (or divide floats, which give inf or NaN).",
                name=ctx.op.name))
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(ctx.xp, x, y)
    return kernel


_BY_ZERO = "Integer division by zero"
register_op("FloorDiv", broadcast_shape_fn, _checked(
    lambda xp, x, y: xp.floor_divide(x, y), errors.InvalidArgumentError, _BY_ZERO))
register_op("FloorMod", broadcast_shape_fn, _checked(
    lambda xp, x, y: xp.remainder(x, y), errors.InvalidArgumentError, _BY_ZERO))
register_op("TruncateMod", broadcast_shape_fn, _checked(
    lambda xp, x, y: xp.fmod(x, y), errors.InternalError,
    "Unexpected error in binary operator (only integer div and mod should have errors)"))


def _floormod_grad(op: Any, grad: Tensor) -> list:
    x, y = op.inputs
    return [sum_to(grad, x, y), sum_to(grad * negative(floordiv(x, y)), y, x)]


set_gradient("FloorMod", _floormod_grad)
not_differentiable("FloorDiv")


def _remainder_op(op_type: str, x: Any, y: Any, name: str, check: bool = True) -> Tensor:
    g = graph_of([x, y])
    with g.as_default(), g.name_scope(name) as scope:
        tx, ty = binary_inputs(op_type, x, y)
        if check and tx.dtype not in _ALLOWED:
            raise TypeError(f"Value passed to parameter 'x' has DataType {tx.dtype.name} not "
                            "in list of allowed values: "
                            + ", ".join(d.name for d in _ALLOWED))
        return g.create_op(op_type, [tx, ty], {"T": tx.dtype}, name=scope).outputs[0]


def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x // y``: the quotient rounded down (``FloorDiv``)."""
    return _remainder_op("FloorDiv", x, y, name or "floordiv", check=False)


def floormod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """``x % y``: the remainder with the divisor's sign (``FloorMod``)."""
    return _remainder_op("FloorMod", x, y, name or "FloorMod")


mod = floormod


def truncatemod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The remainder with the dividend's sign, as C's ``fmod`` (``TruncateMod``)."""
    return _remainder_op("TruncateMod", x, y, name or "TruncateMod")


for _op, _fn in {
    "__mod__": lambda s, o: floormod(s, o, name="mod"),
    "__rmod__": lambda s, o: floormod(o, s, name="mod"),
    "__floordiv__": lambda s, o: floordiv(s, o, name="floordiv"),
    "__rfloordiv__": lambda s, o: floordiv(o, s, name="floordiv"),
}.items():
    register_operator(_op, _fn)
