"""Einsum (``tf.einsum``): sums of products over labelled axes, one op as in TF 2's graphs
(``einsum/Einsum``, its ``equation`` attr as written). tfteach takes the common forms with
one or two operands: matmul (``ij,jk->ik``), batch matmul (``bij,bjk->bik``,
``...ij,...jk->...ik``, whose ``...`` dimensions broadcast), transposes, reductions
(``ij->i``), outer products (``i,j->ij``), dot products, implicit outputs (``ij,jk``).
A label repeated within one operand (traces, diagonals) and three or more operands are
UnimplementedError naming the equation.

``expand`` turns an equation into one letter per axis (each ``...`` becomes fresh capital
letters, right-aligned, from the operands' ranks). The gradient of each operand is an
einsum of the output gradient with the other operand, summed over the ``...`` axes the
operand broadcast and broadcast over the labels only that operand had. No state.
"""
from __future__ import annotations

import string
from collections import Counter
from typing import Any

from tfteach import errors
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor, graph_of, shape_error, same_dtype
from tfteach.ops.manip_ops import stack

__all__ = ["einsum", "expand"]


def _unsupported(equation: str, why: str) -> errors.UnimplementedError:
    return errors.UnimplementedError(
        f"tfteach's tf.einsum does not support the equation '{equation}': {why}",
        hint=tr("write it with tf.matmul, tf.transpose, tf.reduce_sum and tf.linalg.diag_part "
                "instead, or use one label per axis with one or two operands."))


def _split(equation: str, count: int) -> tuple[list[str], str | None]:
    """The operands' and the output's subscripts as written (``None``: implicit output)."""
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    ins = lhs.split(",")
    if len(ins) != count:
        raise ValueError(f"Input count mismatch: the equation '{equation}' has {len(ins)} "
                         f"operands but {count} were given")
    if count > 2:
        raise _unsupported(equation, "three or more operands")
    for labels in ins + [out]:
        if labels.replace("...", "", 1).strip(string.ascii_letters):
            raise ValueError(f"Invalid character in the einsum equation '{equation}'")
    for labels in ins:
        plain = labels.replace("...", "")
        if len(set(plain)) != len(plain):
            raise _unsupported(equation, f"the label repeated in '{labels}' (a trace or "
                                         "diagonal)")
    return ins, out if arrow else None


def _ellipsis_lengths(equation: str, ins: list[str], ranks: list) -> list[int] | None:
    lengths = []
    for labels, rank in zip(ins, ranks, strict=True):
        if "..." not in labels:
            lengths.append(0)
            continue
        if rank is None:
            return None
        n = rank - (len(labels) - 3)
        if n < 0:
            raise ValueError(f"Input '{labels}' of the einsum equation '{equation}' has rank "
                             f"{rank}, fewer than its labels")
        lengths.append(n)
    return lengths


def expand(equation: str, ranks: list) -> tuple[list[str], str, str] | None:
    """``(operand labels, output labels, the letters that stand for ...)``, one letter per
    axis; ``None`` when an operand with ``...`` has an unknown rank."""
    ins, out = _split(equation, len(ranks))
    lengths = _ellipsis_lengths(equation, ins, ranks)
    if lengths is None:
        return None
    fresh = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in equation]
    ell = "".join(fresh[:max(lengths, default=0)])
    ins = [labels.replace("...", ell[len(ell) - n:]) for labels, n in zip(ins, lengths,
                                                                           strict=True)]
    counts = Counter("".join(ins))
    if out is None:
        if ell:
            raise ValueError(f"The einsum equation '{equation}' needs an explicit output "
                             "('->...') for its ellipsis")
        out = "".join(sorted(label for label, n in counts.items() if n == 1))
    elif ell and "..." not in out:
        raise ValueError(f"The output of the einsum equation '{equation}' must keep the "
                         "ellipsis ('...') its inputs have")
    out = out.replace("...", ell)
    if len(set(out)) != len(out) or any(label not in counts for label in out):
        raise ValueError(f"Invalid output subscripts '{out}' in the einsum equation "
                         f"'{equation}'")
    return ins, out, ell


def _label_sizes(op: Any, ins: list[str], ell: str) -> dict:
    """Each label's size from the static shapes; ``...`` sizes broadcast (1 against n)."""
    sizes: dict[str, int | None] = {}
    for labels, t in zip(ins, op.inputs, strict=True):
        if t.shape.ndims is None:
            continue
        if t.shape.ndims != len(labels):
            raise shape_error(op, f"Input {labels} has rank {t.shape.ndims} but the equation "
                                  f"gives it {len(labels)} labels")
        for label, dim in zip(labels, t.shape.dims, strict=True):
            seen = sizes.get(label)
            if label in ell and 1 in (seen, dim):
                sizes[label] = dim if seen == 1 else seen
            elif dim is not None and seen is not None and seen != dim:
                raise shape_error(op, f"Dimensions must be equal, but are {seen} and {dim}")
            else:
                sizes[label] = dim if seen is None else seen
    return sizes


def _einsum_shape(op: Any) -> list:
    dtype = op.inputs[0].dtype
    parts = expand(op.attrs["equation"], [t.shape.ndims for t in op.inputs])
    if parts is None:
        return [(dtype, unknown_shape())]
    ins, out, ell = parts
    sizes = _label_sizes(op, ins, ell)
    return [(dtype, TensorShape([sizes.get(label) for label in out]))]


def _einsum_kernel(ctx: Any, *inputs: Any) -> Any:
    ins, out, _ = expand(ctx.attrs["equation"], [x.ndim for x in inputs])
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
    ins, out = _split(equation, len(inputs))
    if out is None and "..." not in "".join(ins):
        out = expand(equation, [len(labels) for labels in ins])[1]
    g = graph_of(list(inputs))
    with g.as_default(), g.name_scope(name or "einsum"):
        written = ",".join(ins) + ("" if out is None else f"->{out}")
        return _raw_einsum(written, list(inputs))


def _grad_for(operand: Tensor, labels: str, grad_eq_inputs: str, others: list,
              ell: str) -> Tensor:
    """The gradient of one operand: an einsum into the labels it shares, summed over the
    ``...`` axes it broadcast, then broadcast over the labels only it had."""
    seen = set(grad_eq_inputs.replace(",", ""))
    kept = "".join(label for label in labels if label in seen)
    g = _raw_einsum(f"{grad_eq_inputs}->{kept}", others)
    dims = dict(zip(labels, operand.shape.dims, strict=True))
    spread = [i for i, label in enumerate(kept) if label in ell and dims[label] == 1]
    if spread:
        g = math_ops.reduce_sum(g, spread, keepdims=True)
    if kept == labels:
        return g
    for axis, label in enumerate(labels):
        if label not in seen:
            g = array_ops.expand_dims(g, axis)
    return array_ops.broadcast_to(g, array_ops.shape(operand))


def _broadcast_ellipsis(t: Tensor, labels: str, grad: Tensor, out: str, ell: str) -> Tensor:
    """``t`` with the ``...`` axes it holds at size 1 widened to the output's sizes, so that
    an einsum with the output gradient sees equal sizes."""
    dims, out_dims = t.shape.dims or [], grad.shape.dims or [None] * len(out)
    narrow = [i for i, label in enumerate(labels) if label in ell and dims[i] == 1
              and out_dims[out.index(label)] != 1]
    if not narrow:
        return t
    own, wide = array_ops.shape(t), array_ops.shape(grad)
    target = [wide[out.index(label)] if i in narrow else own[i]
              for i, label in enumerate(labels)]
    return array_ops.broadcast_to(t, stack(target))


def _einsum_grad(op: Any, grad: Tensor) -> list:
    parts = expand(op.attrs["equation"], [t.shape.ndims for t in op.inputs])
    if parts is None:
        raise _unsupported(op.attrs["equation"], "its gradient needs the ranks of the "
                                                 "operands with '...'")
    ins, out, ell = parts
    if len(ins) == 1:
        return [_grad_for(op.inputs[0], ins[0], out, [grad], ell)]
    a, b = op.inputs
    wide_a, wide_b = (_broadcast_ellipsis(t, labels, grad, out, ell)
                      for t, labels in ((a, ins[0]), (b, ins[1])))
    return [_grad_for(a, ins[0], f"{out},{ins[1]}", [grad, wide_b], ell),
            _grad_for(b, ins[1], f"{out},{ins[0]}", [grad, wide_a], ell)]


set_gradient("Einsum", _einsum_grad)
