"""Sparse updates of variables: ``ScatterAdd``/``ScatterSub``/``ScatterUpdate`` and the
optimizers' ``SparseApply*`` ops, which change only the rows that ``indices`` name.

An optimizer applies an ``IndexedSlices`` gradient with them (TF's ``_apply_sparse``):
GradientDescent subtracts ``lr * values`` with ``ScatterSub``, where repeated indices add up;
Momentum, Adagrad and RMSProp first sum repeated indices (``Unique`` + ``UnsortedSegmentSum``)
and then run ``SparseApplyMomentum`` ... on those rows; Adam uses ``ScatterAdd`` on its
slots. A ``SparseApply*`` kernel given repeated indices applies them one after the other,
as TF's loop does (here in rounds: the first occurrence of every index, then the second...).

Like the dense training ops in ``tfteach.ops.training_ops``: refs first, the named rows
written into the variable's buffer (concurrent updates may race on single rows, never lose
a whole update), ``use_locking`` holds the variable's lock for the whole update. Indices
are checked first, so a bad index changes nothing.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.registry import GPU_FLOAT, get, register_op
from tfteach.i18n import tr
from tfteach.ops.common import bad_index, convert_to_tensor, index_add, shape_error
from tfteach.ops.state_ops import _locked, _ref_of


def _host_indices(ctx: Any, indices: Any) -> np.ndarray:
    return np.asarray(ctx.device.to_host(indices)).reshape(-1)


def _row_hint(rows: int) -> str:
    return tr("every index must name a row of the variable: 0 <= i < {rows}.", rows=rows)


# ---- Scatter* --------------------------------------------------------------------------------
def _scatter(fn: Callable) -> Callable:
    """A Scatter kernel: ``fn(xp, buffer, device_indices, rows)`` changes the variable's
    buffer in place."""
    def kernel(ctx, ref, indices, updates):
        op, xp = ctx.op, ctx.xp
        idx = _host_indices(ctx, indices)
        with _locked(ctx, ref):
            buf = ref.buffer(op)
            bad = bad_index(idx, buf.shape[0])
            if bad is not None:
                raise errors.InvalidArgumentError(
                    f"indices[{bad[0]}] = {bad[1]} is not in [0, {buf.shape[0]})", op=op,
                    hint=_row_hint(buf.shape[0]))
            rows = xp.broadcast_to(updates, (idx.size,) + buf.shape[1:])
            fn(xp, buf, xp.asarray(idx), rows)
        return ref
    return kernel


def _scatter_update(xp, new, idx, rows):
    new[idx] = rows


def _scatter_shape(op):
    ref, indices, updates = op.inputs
    if ref.shape.dims is not None and indices.shape.dims is not None and updates.shape.ndims:
        expected = indices.shape.dims + ref.shape.dims[1:]
        if not updates.shape.is_compatible_with(expected):
            raise shape_error(op, f"Shapes must be equal rank, but are {updates.shape.ndims} "
                                  f"and {len(expected)}" if updates.shape.ndims != len(expected)
                              else f"Dimensions {updates.shape} and {list(expected)} are not "
                                   "compatible")
    return [(ref.dtype, ref.shape)]


_SCATTER_OPS = {
    "ScatterAdd": lambda xp, new, idx, rows: index_add(xp, new, idx, rows),
    "ScatterSub": lambda xp, new, idx, rows: index_add(xp, new, idx, -rows),
    "ScatterUpdate": _scatter_update,
}
for _type, _fn in _SCATTER_OPS.items():
    register_op(_type, _scatter_shape, _scatter(_fn), gpu_types=GPU_FLOAT, stateful=True,
                ref_inputs=(0,), ref_output=True)


def _scatter_op(op_type: str, ref: Any, indices: Any, updates: Any, use_locking: bool,
                name: str | None) -> Tensor:
    r = _ref_of(ref)
    g = r.graph
    with g.as_default():
        idx = convert_to_tensor(indices, name="indices")
        upd = convert_to_tensor(updates, dtype=r.dtype, name="updates")
    return g.create_op(op_type, [r, idx, upd], {"T": r.dtype, "Tindices": idx.dtype,
                       "use_locking": use_locking}, name=name or op_type).outputs[0]


def scatter_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices] += updates`` (repeated indices add up); the variable after."""
    return _scatter_op("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices] -= updates`` (repeated indices add up); the variable after."""
    return _scatter_op("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                   name: str | None = None) -> Tensor:
    """``ref[indices] = updates``; the variable after."""
    return _scatter_op("ScatterUpdate", ref, indices, updates, use_locking, name)


# ---- SparseApply* ----------------------------------------------------------------------------
def _rounds(idx: np.ndarray) -> list[np.ndarray]:
    """Positions of ``idx`` in rounds in which no index repeats: first occurrences, then
    second occurrences, ... (each round keeps the order of ``idx``)."""
    order = np.argsort(idx, kind="stable")
    ranked = idx[order]
    occurrence = np.empty(idx.size, dtype=np.int64)
    occurrence[order] = np.arange(idx.size) - np.searchsorted(ranked, ranked, side="left")
    if idx.size == 0 or occurrence.max() == 0:
        return [np.arange(idx.size)]
    return [np.flatnonzero(occurrence == k) for k in range(int(occurrence.max()) + 1)]


def _sparse_apply(n_refs: int, rule: Callable) -> Callable:
    """A SparseApply kernel: ``rule(*ref_rows, *hyper, grad_rows) -> new ref_rows``."""
    def kernel(ctx, *args):
        op, xp = ctx.op, ctx.xp
        refs, hyper = args[:n_refs], list(args[n_refs:])
        at = op.op_def.extra["grad_index"] - n_refs
        grad, indices = hyper.pop(at), hyper.pop(at)
        idx = _host_indices(ctx, indices)
        with _locked(ctx, refs[0]):
            arrays = [r.buffer(op) for r in refs]
            bad = bad_index(idx, arrays[0].shape[0])
            if bad is not None:
                raise errors.InvalidArgumentError(
                    f"Index {bad[1]} at offset {bad[0]} in indices is out of range", op=op,
                    hint=_row_hint(arrays[0].shape[0]))
            for pos in _rounds(idx):
                rows = xp.asarray(idx[pos])
                new = rule(ctx, *[a[rows] for a in arrays], *hyper, grad[xp.asarray(pos)])
                for a, r in zip(arrays, new, strict=True):
                    a[rows] = r
        return refs[0]
    return kernel


def _momentum(ctx, var, accum, lr, momentum, grad):
    accum = accum * momentum + grad
    if ctx.attrs["use_nesterov"]:
        return var - (grad * lr + accum * momentum * lr), accum
    return var - lr * accum, accum


def _adagrad(ctx, var, accum, lr, grad):
    accum = accum + grad * grad
    return var - lr * grad / ctx.xp.sqrt(accum), accum


def _rms_prop(ctx, var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms * rho + grad * grad * (1 - rho)
    mom = mom * momentum + lr * grad / ctx.xp.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _centered_rms_prop(ctx, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    mg = mg * rho + grad * (1 - rho)
    ms = ms * rho + grad * grad * (1 - rho)
    mom = mom * momentum + lr * grad / ctx.xp.sqrt(ms - mg * mg + epsilon)
    return var - mom, mg, ms, mom


def _sparse_apply_shape(op):
    var = op.inputs[0]
    at = op.op_def.extra["grad_index"]
    grad, indices = op.inputs[at], op.inputs[at + 1]
    if indices.shape.ndims not in (None, 1):
        raise shape_error(op, f"Shape must be rank 1 but is rank {indices.shape.ndims}")
    if var.shape.dims is not None and grad.shape.dims is not None and \
            not grad.shape.is_compatible_with([None] + list(var.shape.dims[1:])):
        raise shape_error(op, f"var and grad do not have the same shape{var.shape.bracket()} "
                              f"{grad.shape.bracket()}")
    return [(var.dtype, var.shape)]


# type -> (rule, number of ref inputs, index of the gradient input; the indices follow it)
_SPARSE_TRAINING_OPS = {
    "SparseApplyMomentum": (_momentum, 2, 3),
    "SparseApplyAdagrad": (_adagrad, 2, 3),
    "SparseApplyRMSProp": (_rms_prop, 3, 7),
    "SparseApplyCenteredRMSProp": (_centered_rms_prop, 4, 8),
}
for _type, (_rule, _n_refs, _grad_index) in _SPARSE_TRAINING_OPS.items():
    register_op(_type, _sparse_apply_shape, _sparse_apply(_n_refs, _rule),
                gpu_types=frozenset(dtypes.FLOATS), stateful=True,
                ref_inputs=tuple(range(_n_refs)), ref_output=True, cheap=False,
                extra={"grad_index": _grad_index})


def apply_sparse_update(op_type: str, refs: list, values: list, indices: Any,
                        name: str | None = None, **attrs: Any) -> Tensor:
    """Create ``op_type`` (e.g. ``SparseApplyMomentum``) on variables ``refs``.

    ``values`` are the op's other inputs in TF's order without the indices (e.g.
    ``[lr, grad, momentum]``); the indices go right after the gradient. Python numbers
    become constants of the variable's dtype."""
    rs = [_ref_of(r) for r in refs]
    g = rs[0].graph
    with g.as_default():
        vals = [convert_to_tensor(v, dtype=rs[0].dtype) for v in values]
        idx = convert_to_tensor(indices, name="indices")
    at = get(op_type).extra["grad_index"] - len(rs) + 1
    attrs.setdefault("use_locking", False)
    return g.create_op(op_type, rs + vals[:at] + [idx] + vals[at:],
                       {"T": rs[0].dtype, "Tindices": idx.dtype, **attrs},
                       name=name or op_type).outputs[0]
