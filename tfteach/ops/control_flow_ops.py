"""TF 1.x's control-flow primitives: ``Switch``, ``RefSwitch``, ``Merge``, ``Enter``,
``RefEnter``, ``Exit``, ``NextIteration`` and ``LoopCond``, from which ``tf.cond``,
``tf.case`` and ``tf.while_loop`` are built (``cond_ops``, ``while_ops``).

A tensor may be *dead*: the output of a ``Switch`` that was not taken. The runtime
(``tfteach.runtime.frames``) propagates deadness as TF's executor does: an op with a dead
input does not run and its outputs are dead; a ``Merge`` forwards its first live input (and
its index), and is dead only when all its inputs are. ``Enter`` moves a value into a child
frame (a loop's iterations), ``Exit`` back out, ``NextIteration`` to the next iteration.
The kernels here only compute values; ``OpDef.extra["flow"]`` tells the runtime each op's
role, so nothing matches on op-type strings.

The gradients of ``Switch`` and ``Merge`` here are those of a cond (TF's ``_SwitchGrad`` /
``_MergeGrad`` in a ``CondContext``); a while loop is differentiated as a whole
(``while_grad``); ``Enter``'s passes a gradient taken inside a loop's body to the outside
tensor it came from.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import ALL_TYPES, register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.common import create_op, shape_error

__all__ = ["DEAD", "switch", "ref_switch", "merge", "enter", "exit_", "next_iteration",
           "loop_cond", "output_context"]


class _Dead:
    """The value of a dead tensor (an untaken ``Switch`` output)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<dead>"


DEAD = _Dead()


def _check_pred(op: Any, t: Tensor, arg: str) -> None:
    """TF's checks of a predicate: a bool scalar."""
    if t.dtype is not dtypes.bool_:
        raise TypeError(with_hint(
            f"Input '{arg}' of '{op.type}' Op has type {t.dtype.name} that does not match "
            "expected type of bool.",
            tr("the predicate of tf.cond or tf.while_loop must be a bool tensor: compare "
               "values (tf.less, x > 0) or tf.cast it to tf.bool.")))
    if t.shape.rank not in (None, 0):
        raise ValueError(with_hint(
            str(shape_error(op, f"Shape must be rank 0 but is rank {t.shape.rank}")),
            tr("the predicate must be one bool (a scalar); reduce a vector with "
               "tf.reduce_all or tf.reduce_any first.")))


def _switch_shape(op: Any) -> list:
    data, pred = op.inputs
    _check_pred(op, pred, "pred")
    return [(data.dtype, data.shape), (data.dtype, data.shape)]


def _switch_kernel(ctx: Any, data: Any, pred: Any) -> tuple:
    outs = [DEAD, DEAD]
    outs[int(bool(ctx.device.to_host(pred)))] = data
    return tuple(outs)


def _merge_shape(op: Any) -> list:
    first = op.inputs[0]
    shape = first.shape
    for t in op.inputs[1:]:
        if t.dtype is not first.dtype:
            raise TypeError(f"Input 'inputs' of 'Merge' Op has types "
                            f"[{', '.join(x.dtype.name for x in op.inputs)}] that don't all "
                            "match.")
        shape = _most_specific_common(shape, t.shape)
    return [(first.dtype, shape), (dtypes.int32, TensorShape([]))]


def _most_specific_common(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.rank is None or b.rank is None or a.rank != b.rank:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims, strict=True)])


def _merge_kernel(ctx: Any, *inputs: Any) -> tuple:
    """The first live input and its index (the runtime calls it once one is live)."""
    for i, x in enumerate(inputs):
        if x is not DEAD:
            return x, np.asarray(i, dtype=np.int32)
    return DEAD, DEAD


def _same_shape(op: Any) -> list:
    t = op.inputs[0]
    return [(t.dtype, t.shape)]


def _loop_cond_shape(op: Any) -> list:
    _check_pred(op, op.inputs[0], "input")
    return [(dtypes.bool_, TensorShape([]))]


def _forward(ctx: Any, x: Any) -> Any:
    return x


register_op("Switch", _switch_shape, _switch_kernel, gpu_types=ALL_TYPES, extra={"flow": "switch"})
register_op("RefSwitch", _switch_shape, _switch_kernel, gpu_types=ALL_TYPES, ref_inputs=(0,),
            ref_output=True, extra={"flow": "switch"})
register_op("Merge", _merge_shape, _merge_kernel, gpu_types=ALL_TYPES, extra={"flow": "merge"})
register_op("Enter", _same_shape, _forward, gpu_types=ALL_TYPES, extra={"flow": "enter"})
register_op("RefEnter", _same_shape, _forward, gpu_types=ALL_TYPES, ref_inputs=(0,),
            ref_output=True, extra={"flow": "enter"})
register_op("Exit", _same_shape, _forward, gpu_types=ALL_TYPES, extra={"flow": "exit"})
register_op("NextIteration", _same_shape, _forward, gpu_types=ALL_TYPES, extra={"flow": "next"})
register_op("LoopCond", _loop_cond_shape, _forward, gpu_types=ALL_TYPES, dtype_attr="",
            extra={"flow": "loop_cond"})


def switch(data: Tensor, pred: Tensor, name: str = "Switch") -> tuple[Tensor, Tensor]:
    """``(output_false, output_true)``: ``data`` on the side ``pred`` picks, dead on the other
    (a ref ``data`` gets a ``RefSwitch``, as TF's ``_SwitchRefOrTensor``)."""
    g = data.graph
    with g.colocate_with(data.op, ignore_existing=True):
        if data.is_ref:
            op = create_op("RefSwitch", [data, pred], {"T": data.dtype}, name)
            op.outputs[1].is_ref = True
        else:
            op = create_op("Switch", [data, pred], {"T": data.dtype}, name)
    return op.outputs[0], op.outputs[1]


ref_switch = switch


def merge(inputs: list[Tensor], name: str = "Merge") -> tuple[Tensor, Tensor]:
    """``(output, value_index)``: the first live input and which one it was."""
    op = create_op("Merge", list(inputs), {"T": inputs[0].dtype, "N": len(inputs)}, name)
    return op.outputs[0], op.outputs[1]


def enter(data: Tensor, frame_name: str, is_constant: bool = False,
          parallel_iterations: int = 10, name: str = "Enter") -> Tensor:
    """``data`` in the frame ``frame_name`` (a ref, e.g. a variable assigned in the loop
    body, enters as a ref: ``RefEnter``)."""
    return create_op("RefEnter" if data.is_ref else "Enter", [data],
                     {"T": data.dtype, "frame_name": frame_name, "is_constant": is_constant,
                      "parallel_iterations": parallel_iterations}, name).outputs[0]


def exit_(data: Tensor, name: str = "Exit") -> Tensor:
    return create_op("Exit", [data], {"T": data.dtype}, name).outputs[0]


def next_iteration(data: Tensor, name: str = "NextIteration") -> Tensor:
    return create_op("NextIteration", [data], {"T": data.dtype}, name).outputs[0]


def loop_cond(pred: Tensor, name: str = "LoopCond") -> Tensor:
    return create_op("LoopCond", [pred], {}, name).outputs[0]


def output_context(op: Any) -> Any:
    """The control-flow context an op's outputs live in (an ``Exit``'s: its loop's outer
    one), as TF's ``GetOutputContext``."""
    ctx = op._flow_context
    if ctx is not None and op.op_def.extra.get("flow") == "exit":
        return ctx.outer
    return ctx


# ---- gradients of a cond's Switch and Merge --------------------------------------------
def _switch_grad(op: Any, grad_false: Any, grad_true: Any) -> list:
    """A cond's Switch: the live branch's gradient, merged (zeros for a branch whose output
    got none, built on that branch's side so they are dead when it is not taken)."""
    if grad_false is None and grad_true is None:
        return [None, None]
    outs = op.outputs
    from tfteach.ops.array_ops import zeros_like
    grads = [zeros_like(t) if gr is None else gr
             for t, gr in zip(outs, (grad_false, grad_true), strict=True)]
    return [merge(grads, name="cond_grad")[0], None]


def _merge_grad(op: Any, grad: Any, _index_grad: Any) -> list:
    """A cond's Merge: the gradient goes back to the branch that was taken (a Switch on the
    cond's predicate)."""
    ctx = output_context(op.inputs[0].op)
    pred = getattr(ctx, "pred", None)
    if pred is None:
        raise LookupError(with_hint(
            f"No gradient defined for operation '{op.name}' (op type: Merge) outside a cond",
            tr("tf.gradients goes through the Merge ops that tf.cond builds; a Merge built "
               "by hand has no gradient.")))
    return list(switch(grad, pred, name="cond_grad"))


def _enter_grad(op: Any, grad: Any) -> list:
    """TF's ``_EnterGrad`` outside a loop's gradient: ``tf.gradients`` called in a loop's
    body reaches a tensor from outside through its ``Enter`` and passes the gradient on (a
    whole loop is differentiated by ``while_grad``, never through its ``Enter`` ops)."""
    return [grad]


set_gradient("Switch", _switch_grad)     # (RefSwitch feeds Assign ops, which have none)
set_gradient("Merge", _merge_grad)
set_gradient("Enter", _enter_grad)
