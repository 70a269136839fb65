"""Einsum (``tf.einsum``): sums of products over labelled axes, one op as in TF 2's graphs
(``einsum/Einsum``). tfteach takes the common forms with one or two operands and a label
per axis: matmul (``ij,jk->ik``), batch matmul (``bij,bjk->bik``), transposes, reductions
(``ij->i``), outer products (``i,j->ij``), dot products, implicit outputs (``ij,jk``).
Ellipses, a label repeated within one operand (traces, diagonals) and three or more
operands are UnimplementedError naming the equation. The gradient of each operand is an
einsum of the output gradient with the other operand, broadcast over the labels only that
operand had. No state.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import convert_to_tensor, graph_of, shape_error, same_dtype

__all__ = ["einsum"]


def _unsupported(equation: str, why: str) -> errors.UnimplementedError:
    return errors.UnimplementedError(
        f"tfteach's tf.einsum does not support the equation '{equation}': {why}",
        hint=tr("write it with tf.matmul, tf.transpose, tf.reduce_sum and tf.linalg.diag_part "
                "instead, or use one label per axis with one or two operands."))


def parse(equation: str, count: int) -> tuple[list[str], str]:
    """``(input labels, output labels)`` of an explicit or implicit equation."""
    eq = equation.replace(" ", "")
    if "." in eq:
        raise _unsupported(equation, "ellipses (...) are not supported")
    lhs, arrow, out = eq.partition("->")
    ins = lhs.split(",")
    if len(ins) != count:
        raise ValueError(f"Input count mismatch: the equation '{equation}' has {len(ins)} "
                         f"operands but {count} were given")
    if count > 2:
        raise _unsupported(equation, "three or more operands")
    for labels in ins:
        if not labels.isalpha() and labels:
            raise ValueError(f"Invalid character in the einsum equation '{equation}'")
        if len(set(labels)) != len(labels):
            raise _unsupported(equation, f"the label repeated in '{labels}' (a trace or "
                                         "diagonal)")
    counts = Counter("".join(ins))
    if not arrow:
        out = "".join(sorted(label for label, n in counts.items() if n == 1))
    if len(set(out)) != len(out) or any(label not in counts for label in out):
        raise ValueError(f"Invalid output subscripts '{out}' in the einsum equation "
                         f"'{equation}'")
    return ins, out


def _einsum_shape(op: Any) -> list:
    ins, out = parse(op.attrs["equation"], len(op.inputs))
    sizes: dict[str, int | None] = {}
    for labels, t in zip(ins, op.inputs, strict=True):
        if t.shape.ndims is None:
            continue
        if t.shape.ndims != len(labels):
            raise shape_error(op, f"Input {labels} has rank {t.shape.ndims} but the equation "
                                  f"gives it {len(labels)} labels")
        for label, dim in zip(labels, t.shape.dims, strict=True):
            seen = sizes.get(label)
            if dim is not None and seen is not None and seen != dim:
                raise shape_error(op, f"Dimensions of label '{label}' do not match: {seen} "
                                      f"vs {dim}")
            sizes[label] = dim if seen is None else seen
    dtype = op.inputs[0].dtype
    if any(label not in sizes for label in out):
        return [(dtype, unknown_shape(len(out)))]
    return [(dtype, TensorShape([sizes[label] for label in out]))]


def _einsum_kernel(ctx: Any, *inputs: Any) -> Any:
    ins, out = parse(ctx.attrs["equation"], len(inputs))
    for labels, x in zip(ins, inputs, strict=True):
        if x.ndim != len(labels):
            raise errors.InvalidArgumentError(
                f"Input to einsum has rank {x.ndim} but the equation gives it "
                f"{len(labels)} labels ('{labels}')", op=ctx.op,
                hint=tr("each operand needs one label per axis."))
    return ctx.xp.einsum(f"{','.join(ins)}->{out}", *inputs).astype(inputs[0].dtype, copy=False)


register_op("Einsum", _einsum_shape, _einsum_kernel)


def _raw_einsum(equation: str, inputs: list) -> Tensor:
    g = graph_of(inputs)
    with g.as_default():
        ts = [convert_to_tensor(x, name=f"inputs_{i}") for i, x in enumerate(inputs)]
        dtype = same_dtype("Einsum", ts)
        return g.create_op("Einsum", ts, {"equation": equation, "N": len(ts), "T": dtype},
                           name="Einsum").outputs[0]


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """Sums of products of ``inputs`` over the labelled axes of ``equation``."""
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"Invalid keyword arguments for this function: "
                        f"{', '.join(sorted(kwargs))}. Expected: name.")
    ins, out = parse(equation, len(inputs))
    g = graph_of(list(inputs))
    with g.as_default(), g.name_scope(name or "einsum"):
        return _raw_einsum(f"{','.join(ins)}->{out}", list(inputs))


def _grad_for(operand: Tensor, labels: str, grad_eq_inputs: str, others: list) -> Tensor:
    """The gradient of one operand: an einsum into the labels it shares, then broadcast
    over the labels only it had (summed away in the forward pass)."""
    seen = set(grad_eq_inputs.replace(",", ""))
    kept = "".join(label for label in labels if label in seen)
    g = _raw_einsum(f"{grad_eq_inputs}->{kept}", others)
    if kept == labels:
        return g
    for axis, label in enumerate(labels):
        if label not in seen:
            g = array_ops.expand_dims(g, axis)
    return array_ops.broadcast_to(g, array_ops.shape(operand))


def _einsum_grad(op: Any, grad: Tensor) -> list:
    ins, out = parse(op.attrs["equation"], len(op.inputs))
    if len(ins) == 1:
        return [_grad_for(op.inputs[0], ins[0], out, [grad])]
    a, b = op.inputs
    return [_grad_for(a, ins[0], f"{out},{ins[1]}", [grad, b]),
            _grad_for(b, ins[1], f"{out},{ins[0]}", [grad, a])]


set_gradient("Einsum", _einsum_grad)
