"""CheckNumerics (``tf.check_numerics``, ``tf.debugging.check_numerics``): an identity that
fails the step with InvalidArgumentError when its float input holds NaN or Inf, saying
which (TF's ``<message> : Tensor had NaN values``). Its gradient checks the gradient the
same way, as TF's. ``tf.verify_tensor_all_finite`` (``tf.debugging.assert_all_finite``)
reads a tensor after such a check. No state.
"""
from __future__ import annotations

from typing import Any

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.i18n import tr
from tfteach.ops.array_ops import identity
from tfteach.ops.common import convert_to_tensor, graph_of

__all__ = ["check_numerics", "verify_tensor_all_finite"]


def _check_numerics_kernel(ctx: Any, x: Any) -> Any:
    xp = ctx.xp
    nan, inf = bool(xp.isnan(x).any()), bool(xp.isinf(x).any())
    if nan or inf:
        found = "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")
        raise errors.InvalidArgumentError(
            f"{ctx.attrs['message']} : Tensor had {found} values", op=ctx.op,
            hint=tr("{name} found {found} values: look for a division by zero, the log of "
                    "zero or a negative number, or a learning rate that is too large.",
                    name=ctx.op.name, found=found))
    return x


def _shape(op: Any) -> list:
    x = op.inputs[0]
    if not x.dtype.is_floating:
        raise TypeError(f"Value passed to parameter 'tensor' has DataType {x.dtype.name} not "
                        "in list of allowed values: bfloat16, float16, float32, float64")
    return [(x.dtype, x.shape)]


register_op("CheckNumerics", _shape, _check_numerics_kernel, stateful=True)


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """``tensor`` unchanged; fails the step if it holds a NaN or an Inf."""
    g = graph_of([tensor])
    with g.as_default():
        x = convert_to_tensor(tensor)
        return g.create_op("CheckNumerics", [x], {"T": x.dtype, "message": message},
                           name=name or "CheckNumerics").outputs[0]


set_gradient("CheckNumerics", lambda op, grad: [check_numerics(
    grad, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
    f"{op.attrs['message']}")])


def verify_tensor_all_finite(t: Any = None, msg: str | None = None, name: str | None = None,
                             x: Any = None, message: str | None = None) -> Tensor:
    """``t`` (or ``x``), read only after a CheckNumerics of it passed (``tf.debugging.
    assert_all_finite``; TF's ``VerifyFinite/control_dependency``)."""
    t = x if t is None else t
    g = graph_of([t])
    with g.as_default(), g.name_scope(name or "VerifyFinite"):
        t = convert_to_tensor(t, name="x")
        with g.colocate_with(t.op):
            check = check_numerics(t, message=message if msg is None else msg)
            with g.control_dependencies([check]):
                return identity(t, name="control_dependency")
