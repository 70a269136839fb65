"""Cumulative sums and products along an axis: Cumsum (``tf.cumsum``) and Cumprod
(``tf.cumprod``, which Prod's gradient in ``math_grad`` also uses), both ``exclusive`` and
``reverse`` as TF, with TF's gradients.

Cumsum's gradient is a cumsum of the gradient in the other direction; Cumprod's is TF's
``cumsum(cumprod(x) * grad, reverse=not reverse) / x`` (so, as in TF, not finite where x
is 0). No state.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.ops.common import convert_to_tensor


def _scan_kernel(scan: str, first: str):
    """A cumulative kernel: ``xp.<scan>`` along the axis, ``exclusive`` shifting in
    ``xp.<first>`` (zeros for sums, ones for products), ``reverse`` from the end."""
    def kernel(ctx, x, axis):
        xp, ax = ctx.xp, int(ctx.device.to_host(axis))
        if ctx.attrs["reverse"]:
            x = xp.flip(x, ax)
        out = getattr(xp, scan)(x, axis=ax, dtype=x.dtype)
        if ctx.attrs["exclusive"]:
            start = getattr(xp, first)(xp.take(x, [0], axis=ax))
            out = xp.concatenate([start, xp.take(out, range(x.shape[ax] - 1), axis=ax)], axis=ax)
        return xp.flip(out, ax) if ctx.attrs["reverse"] else out
    return kernel


register_op("Cumsum", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
            _scan_kernel("cumsum", "zeros_like"))
register_op("Cumprod", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)],
            _scan_kernel("cumprod", "ones_like"))


def _cumulative(op_type: str, x: Any, axis: Any, exclusive: bool, reverse: bool,
                name: str | None) -> Tensor:
    t = convert_to_tensor(x)
    g = t.graph
    with g.as_default(), g.name_scope(name or op_type) as scope:
        t = convert_to_tensor(t, name="x")
        a = convert_to_tensor(axis, dtype=dtypes.int32, name="axis")
        return g.create_op(op_type, [t, a], {"T": t.dtype, "Tidx": a.dtype,
                           "exclusive": bool(exclusive), "reverse": bool(reverse)},
                           name=scope).outputs[0]


def cumsum(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    """Running sums along ``axis`` (``exclusive``: leaving each element out; ``reverse``:
    from the end)."""
    return _cumulative("Cumsum", x, axis, exclusive, reverse, name)


def cumprod(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Tensor:
    """Running products along ``axis``, as ``cumsum``."""
    return _cumulative("Cumprod", x, axis, exclusive, reverse, name)


def _cumsum_grad(op, grad):
    return [cumsum(grad, op.inputs[1], exclusive=op.attrs["exclusive"],
                   reverse=not op.attrs["reverse"]), None]


def _cumprod_grad(op, grad):
    x, axis = op.inputs
    exclusive, reverse = op.attrs["exclusive"], op.attrs["reverse"]
    prod = cumprod(x, axis, exclusive=exclusive, reverse=reverse)
    out = cumsum(prod * grad, axis, exclusive=exclusive, reverse=not reverse)
    return [out / x, None]


set_gradient("Cumsum", _cumsum_grad)
set_gradient("Cumprod", _cumprod_grad)
