"""``tf.cond`` and ``smart_cond``, built as TF 1.x builds them (``tf.case``, a chain of
conds: ``case_ops``).

``cond(pred, true_fn, false_fn)`` adds ``Switch(pred, pred)``, the pivots ``switch_t`` /
``switch_f`` and ``pred_id``, builds each branch in its ``CondContext`` (every outside
tensor a branch reads goes through a ``Switch`` on ``pred_id``, so the untaken branch's ops
get dead inputs and never run) and joins the branches' results with one ``Merge`` each
(false branch first, as TF).
``smart_cond`` calls a branch directly when the predicate is known while building (a Python
bool or a constant), as ``tf.layers`` does with ``training``.
"""
from __future__ import annotations

from typing import Any, Callable

from tfteach.errors import with_hint
from tfteach.framework.graph import Operation, Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import const_value, convert_to_tensor, graph_of
from tfteach.framework.nest import flatten, pack
from tfteach.ops.control_flow_ops import merge, switch
from tfteach.ops.flow_context import CondContext

__all__ = ["cond", "smart_cond", "flatten", "pack"]


# ---- nesting (TF's ``nest`` for lists, tuples, dicts: tfteach.framework.nest) -----------
def same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and \
            all(same_structure(a[k], b[k]) for k in a)
    seq_a, seq_b = isinstance(a, (list, tuple)), isinstance(b, (list, tuple))
    if seq_a != seq_b:
        return False
    return not seq_a or (len(a) == len(b) and all(same_structure(x, y)
                                                  for x, y in zip(a, b, strict=True)))


def _unpack_if_singleton(res: Any) -> Any:
    if isinstance(res, (list, tuple)) and len(res) == 1:
        return res[0]
    return res


# ---- cond -----------------------------------------------------------------------------
def cond(pred: Any, true_fn: Callable | None = None, false_fn: Callable | None = None,
         strict: bool = False, name: str | None = None, fn1: Callable | None = None,
         fn2: Callable | None = None) -> Any:
    """``true_fn()`` if ``pred`` is true at run time, else ``false_fn()``; only the chosen
    branch's ops run. ``fn1`` / ``fn2``: TF 1.x's old names of the two functions."""
    for arg, old, fn in (("true_fn", "fn1", fn1), ("false_fn", "fn2", fn2)):
        if fn is not None and (true_fn if arg == "true_fn" else false_fn) is not None:
            raise TypeError(f"cond(): '{arg}' and '{old}' may not be set simultaneously.")
    true_fn, false_fn = true_fn or fn1, false_fn or fn2
    for arg, fn in (("true_fn", true_fn), ("false_fn", false_fn)):
        if fn is None:
            raise TypeError(f"cond(): '{arg}' argument required")
        if not callable(fn):
            raise TypeError(with_hint(f"'{arg}' must be callable.", tr(
                "pass a function that builds the branch, e.g. lambda: x + 1, not a tensor.")))
    if isinstance(pred, bool):
        raise TypeError(with_hint("'pred' must not be a Python bool.", tr(
            "a Python bool is known while building: use an if statement, or pass a bool "
            "tensor (e.g. a tf.placeholder(tf.bool)) to choose at run time.")))
    g = graph_of([pred])
    with g.as_default(), g.name_scope(name or "cond"):
        pred = convert_to_tensor(pred)
        p_false, p_true = switch(pred, pred)
        pivot_t = array_ops.identity(p_true, name="switch_t")
        pivot_f = array_ops.identity(p_false, name="switch_f")
        pred_id = array_ops.identity(pred, name="pred_id")
        for t in (p_false, pivot_t, pivot_f, pred_id):
            g.prevent_fetching(t.op)
        orig_t, res_t = _branch(CondContext(g, pred_id, pivot_t, 1), true_fn, "true_fn")
        orig_f, res_f = _branch(CondContext(g, pred_id, pivot_f, 0), false_fn, "false_fn")
        if not strict:
            orig_t, orig_f = _unpack_if_singleton(orig_t), _unpack_if_singleton(orig_f)
        _check_same(orig_t, orig_f, res_t, res_f)
        merges = [merge([f, t])[0] for f, t in zip(flatten(res_f), flatten(res_t),
                                                    strict=True)]
        merges = pack(orig_t, merges)
    return _unpack_if_singleton(merges) if not strict else merges


def _branch(ctx: CondContext, fn: Callable, arg: str) -> tuple[Any, Any]:
    """Build one branch in ``ctx``: (what ``fn`` returned, its tensors inside the branch)."""
    with ctx.entered():
        original = fn()
        if original is None:
            raise ValueError(with_hint(f"'{arg}' must have a return value.", tr(
                "return the branch's result from its function: a tensor, a tuple of "
                "tensors, or an op.")))
        result = pack(original, [_cond_tensor(ctx, v) for v in flatten(original)])
    return original, result


def _cond_tensor(ctx: CondContext, v: Any) -> Tensor:
    if isinstance(v, Operation):          # an op: the pivot stands for it (TF)
        g = v.graph
        with g.control_dependencies([v]):
            return array_ops.identity(ctx.pivot)
    return ctx.add_value(convert_to_tensor(v))


def _check_same(orig_t: Any, orig_f: Any, res_t: Any, res_f: Any) -> None:
    if not same_structure(orig_t, orig_f):
        raise ValueError(with_hint(
            "Incompatible return values of 'true_fn' and 'false_fn': The two structures "
            "don't have the same nested structure.\n\n"
            f"First structure: {orig_t}\n\nSecond structure: {orig_f}",
            tr("both branches of tf.cond must return the same structure (the same number "
               "of tensors, nested the same way).")))
    if not flatten(res_t):
        raise ValueError("'true_fn' and 'false_fn' must return at least one result.")
    for x, y in zip(flatten(res_t), flatten(res_f), strict=True):
        if x.dtype is not y.dtype:
            raise ValueError(with_hint(
                "Outputs of 'true_fn' and 'false_fn' must have the same type(s). "
                f"Received {x.dtype.name} from 'true_fn' and {y.dtype.name} from 'false_fn'.",
                tr("make both branches return the same dtype, e.g. with tf.cast.")))


def smart_cond(pred: Any, true_fn: Callable, false_fn: Callable,
               name: str | None = None) -> Any:
    """``true_fn()`` or ``false_fn()`` now when ``pred`` is known while building (a Python
    bool, a constant), else ``cond``."""
    if isinstance(pred, (bool, int)) and not isinstance(pred, Tensor):
        return true_fn() if pred else false_fn()
    value = const_value(pred) if isinstance(pred, Tensor) else None
    if value is not None:
        return true_fn() if bool(value) else false_fn()
    return cond(pred, true_fn, false_fn, name=name)
