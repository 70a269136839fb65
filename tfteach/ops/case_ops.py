"""``tf.case``: the branch of the first true predicate, built as TF 1.x builds it.

``case([(p0, f0), (p1, f1), ...], default)`` is a chain of conds, the first predicate
outermost, ``default`` in the innermost false branch. Without ``default`` the last pair's
function is the default, guarded as TF guards it: when it runs, an ``Assert`` checks that
its predicate holds (else InvalidArgumentError ``Input error: None of conditions evaluated
as True:`` with the predicates' values) and another that no earlier one does.
``exclusive=True`` adds an ``Assert`` before the chain that at most one predicate (of those
the chain tests) is true, naming them in its message.
"""
from __future__ import annotations

from typing import Any, Callable

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import graph_of
from tfteach.ops.cond_ops import cond
from tfteach.ops.constant_op import constant
from tfteach.ops.logging_ops import Assert
from tfteach.ops.math_ops import less_equal, reduce_sum

__all__ = ["case"]


def case(pred_fn_pairs: Any, default: Callable | None = None, exclusive: bool = False,
         strict: bool = False, name: str = "case") -> Any:
    """The branch of the first true predicate (``default`` when none is), as nested conds;
    without ``default``, a step where no predicate holds fails."""
    preds, fns = _case_pairs(pred_fn_pairs)
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    g = graph_of(list(preds))
    with g.as_default(), g.name_scope(name):
        if default is None:
            default, preds, fns = _default_action(preds, fns)
        fn = default
        for p, action in reversed(list(zip(preds, fns, strict=True))):
            fn = _chained(p, action, fn, strict)
        if not exclusive:
            return fn()
        with g.control_dependencies([_assert_at_most_n_true(
                preds, 1, "Input error: exclusive=True")]):
            return fn()


def _chained(pred: Tensor, true_fn: Callable, false_fn: Callable, strict: bool) -> Callable:
    return lambda: cond(pred, true_fn, false_fn, strict=strict)


def _assert_at_most_n_true(preds: list, n: int, msg: str) -> Operation:
    """TF's check that at most ``n`` of ``preds`` hold, their values in its message."""
    preds_c = array_ops.stack(preds, name="preds_c") if preds else \
        constant([], dtypes.float32, name="preds_c")      # TF's stack of no tensors
    count = reduce_sum(array_ops.cast(preds_c, dtypes.int32), name="num_true_conds")
    holds = less_equal(count, constant(n, name="n_true_conds"))
    names = ", ".join(p.name for p in preds)
    return Assert(holds, [f"{msg}: more than {n} conditions ({names}) evaluated as True:",
                          preds_c], summarize=len(preds))


def _default_action(preds: list, fns: list) -> tuple[Callable, list, list]:
    """TF's default when none is given: the last pair's function, run only after asserting
    that its predicate holds and that no other does."""
    k = len(preds) - 1

    def default_action() -> Any:
        others = ("Implementation error: selected default action #%d was called, but some "
                  "of other predicates are True: " % k)
        all_preds = array_ops.stack(preds, name="preds_c")
        checks = [_assert_at_most_n_true(preds[:k], 0, others),
                  Assert(preds[k], ["Input error: None of conditions evaluated as True:",
                                    all_preds])]
        with preds[k].graph.control_dependencies(checks):
            return fns[k]()

    return default_action, preds[:k], fns[:k]


def _case_pairs(pred_fn_pairs: Any) -> tuple[list, list]:
    if not isinstance(pred_fn_pairs, (list, tuple, dict)):
        raise TypeError("'pred_fn_pairs' must be a list, tuple, or dict. "
                        f"Received: {type(pred_fn_pairs)}")
    if isinstance(pred_fn_pairs, dict):
        pred_fn_pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
    for pair in pred_fn_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in 'pred_fn_pairs' must be a 2-tuple. "
                            f"Received {pair}.")
        pred, fn = pair
        if not isinstance(pred, Tensor):
            raise TypeError(f"pred must be a Tensor, got: {pred}")
        if pred.dtype is not dtypes.bool_:
            raise TypeError(with_hint(f"pred must be Tensor of type bool: {pred.name}", tr(
                "each predicate of tf.case is a bool tensor, e.g. tf.equal(x, 1).")))
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    if not pred_fn_pairs:
        raise ValueError("tf.case needs at least one (predicate, function) pair.")
    preds, fns = zip(*pred_fn_pairs, strict=True)
    return list(preds), list(fns)
