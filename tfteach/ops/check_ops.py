"""TF 1.x's assertions (``tf.assert_equal``, ``tf.assert_less``, ``tf.assert_positive``,
``tf.assert_rank``, ``tf.assert_rank_at_least``, ``tf.assert_type``, ``tf.assert_integer``,
``tf.assert_scalar``, ...; also under ``tf.debugging``), composed as TF
composes them: a comparison, ``reduce_all`` and ``tf.Assert`` (``logging_ops``).

Each returns an op to use with ``tf.control_dependencies``. As in TF, a check that the graph
already decides is decided while building: constant inputs that fail raise
InvalidArgumentError (their values in the message), a known wrong rank ValueError, a wrong
dtype TypeError; a check that holds statically gives a ``NoOp``. At run time the Assert
fails the step with TF's data: the condition, the tensors' names and their first
``summarize`` values. Names follow TF's scopes (``assert_equal_1/Assert/AssertGuard``). No
state.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops
from tfteach.ops.bool_reduce_ops import reduce_all
from tfteach.ops.common import const_value, convert_to_tensor, graph_of
from tfteach.ops.control_ops import no_op
from tfteach.ops.logging_ops import Assert

__all__ = ["assert_equal", "assert_greater", "assert_greater_equal", "assert_less",
           "assert_less_equal", "assert_negative", "assert_non_negative",
           "assert_non_positive", "assert_none_equal", "assert_positive", "assert_rank",
           "assert_rank_at_least", "assert_integer", "assert_scalar", "assert_type"]


def _prefix(message: str | None) -> str:
    return f"{message}.  " if message else ""


def constant_value(t: Tensor) -> np.ndarray | None:
    """The value of ``t`` when the graph already fixes it (TF's ``constant_value`` for the
    ops an assertion meets: Const, Shape/Size/Rank of a known shape, Identity, Cast)."""
    op, source = t.op, t.op.inputs[0].shape if t.op.inputs else None
    if op.type in ("Identity", "StopGradient", "Cast"):
        value = constant_value(op.inputs[0])
        return None if value is None else np.asarray(value).astype(t.dtype.np)
    if op.type == "Shape" and source.is_fully_defined():
        return np.array(source.as_list(), dtype=t.dtype.np)
    if op.type == "Size" and source.is_fully_defined():
        return np.array(source.num_elements(), dtype=t.dtype.np)
    if op.type == "Rank" and source.ndims is not None:
        return np.array(source.ndims, dtype=t.dtype.np)
    return const_value(t)


def _static_text(item: Any) -> str:
    """TF's ``_maybe_constant_value_string``: a constant tensor shows its value."""
    if not isinstance(item, Tensor):
        return str(item)
    value = constant_value(item)
    return str(item) if value is None else str(np.asarray(value))


def _assert_static(holds: bool, data: list) -> None:
    if not holds:
        raise errors.InvalidArgumentError(
            "\n".join(_static_text(d) for d in data),
            hint=tr("the values of this assertion are constants, so it was checked while "
                    "building the graph, and it does not hold; fix the values or the "
                    "condition."))


def _binary_assert(sym: str, opname: str, op_func: Callable, static_func: Callable, x: Any,
                   y: Any, data: list | None, summarize: int | None, message: str | None,
                   name: str | None) -> Operation:
    g = graph_of([x, y])
    with g.as_default(), g.name_scope(name or opname):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, name="y")
        if data is None:
            data = [f"Condition x {sym} y did not hold element-wise:", f"x ({x.name}) = ", x,
                    f"y ({y.name}) = ", y]
        if message is not None:
            data = [message, *data]
        condition = reduce_all(op_func(x, y))
        x_static, y_static = constant_value(x), constant_value(y)
        if x_static is not None and y_static is not None:
            _assert_static(bool(np.all(static_func(x_static, y_static))), data)
        return Assert(condition, data, summarize=summarize)


def _binary(sym: str, opname: str, op_func: Callable, static_func: Callable) -> Callable:
    def check(x: Any, y: Any, data: list | None = None, summarize: int | None = None,
              message: str | None = None, name: str | None = None) -> Operation:
        return _binary_assert(sym, opname, op_func, static_func, x, y, data, summarize,
                              message, name)
    check.__name__ = check.__qualname__ = opname
    check.__doc__ = f"An op that fails unless ``x {sym} y`` holds element-wise."
    return check


assert_none_equal = _binary("!=", "assert_none_equal", math_ops.not_equal, np.not_equal)
assert_less = _binary("<", "assert_less", math_ops.less, np.less)
assert_less_equal = _binary("<=", "assert_less_equal", math_ops.less_equal, np.less_equal)
assert_greater = _binary(">", "assert_greater", math_ops.greater, np.greater)
assert_greater_equal = _binary(">=", "assert_greater_equal", math_ops.greater_equal,
                               np.greater_equal)


def assert_equal(x: Any, y: Any, data: list | None = None, summarize: int | None = None,
                 message: str | None = None, name: str | None = None) -> Operation:
    """An op that fails unless ``x == y`` holds element-wise (a NoOp when x is y)."""
    g = graph_of([x, y])
    with g.as_default(), g.name_scope(name or "assert_equal"):
        if x is y:
            return no_op()
    return _binary_assert("==", "assert_equal", math_ops.equal, np.equal, x, y, data,
                          summarize, message, name)


def _unary(sym: str, opname: str, zero_first: bool, compare: Callable) -> Callable:
    """``assert_positive`` & co.: ``compare(0, x)`` or ``compare(x, 0)`` with TF's data."""
    def check(x: Any, data: list | None = None, summarize: int | None = None,
              message: str | None = None, name: str | None = None) -> Operation:
        g = graph_of([x])
        with g.as_default(), g.name_scope(name or opname):
            x = convert_to_tensor(x, name="x")
            if data is None:
                data = [_prefix(message), f"Condition x {sym} 0 did not hold element-wise:",
                        f"x ({x.name}) = ", x]
            zero = convert_to_tensor(0, dtype=x.dtype)
            pair = (zero, x) if zero_first else (x, zero)
            return compare(*pair, data=data, summarize=summarize)
    check.__name__ = check.__qualname__ = opname
    check.__doc__ = f"An op that fails unless ``x {sym} 0`` holds element-wise."
    return check


assert_positive = _unary(">", "assert_positive", True, assert_less)
assert_non_negative = _unary(">=", "assert_non_negative", True, assert_less_equal)
assert_negative = _unary("<", "assert_negative", False, assert_less)
assert_non_positive = _unary("<=", "assert_non_positive", False, assert_less_equal)


def assert_type(tensor: Any, tf_type: Any, message: str | None = None,
                name: str | None = None) -> Operation:
    """Checks ``tensor``'s dtype while building (TypeError); returns a NoOp."""
    tf_type = dtypes.as_dtype(tf_type)
    g = graph_of([tensor])
    with g.as_default(), g.name_scope(name or "assert_type"):
        tensor = convert_to_tensor(tensor, name="tensor")
        if tensor.dtype != tf_type:
            raise TypeError(errors.with_hint(
                f"{_prefix(message)}{tensor.name} must be of type {tf_type!r}; got "
                f"{tensor.dtype!r}",
                tr("cast the tensor with tf.cast(x, {dtype}) or fix where it is made.",
                   dtype=repr(tf_type))))
        return no_op("statically_determined_correct_type")


def _rank_condition(x: Tensor, rank: Tensor, at_least: bool, data: list,
                    summarize: int | None) -> Operation:
    """TF's ``_assert_rank_condition``: static when both ranks are known."""
    assert_type(rank, dtypes.int32)
    rank_static = constant_value(rank)
    if rank_static is not None:
        if np.ndim(rank_static) != 0:
            raise ValueError("Rank must be a scalar.")
        if x.shape.ndims is not None:
            given = int(rank_static)
            if not (x.shape.ndims >= given if at_least else x.shape.ndims == given):
                raise ValueError("Static rank condition failed", x.shape.ndims, given)
            return no_op("static_checks_determined_all_ok")
    compare = math_ops.greater_equal if at_least else math_ops.equal
    condition = compare(array_ops.rank(x), rank)
    if rank_static is None:
        check = assert_rank(rank, 0, data=["Rank must be a scalar. Received rank: ", rank])
        with x.graph.control_dependencies([check]):
            condition = array_ops.identity(condition)
    return Assert(condition, data, summarize=summarize)


def _rank_check(opname: str, at_least: bool) -> Callable:
    """``assert_rank`` (``at_least`` False) or ``assert_rank_at_least``, as TF builds them."""
    words = "must have rank at least" if at_least else "must have rank"

    def check(x: Any, rank: Any, data: list | None = None, summarize: int | None = None,
              message: str | None = None, name: str | None = None) -> Operation:
        g = graph_of([x, rank, *(data or [])])
        with g.as_default(), g.name_scope(name or opname):
            x = convert_to_tensor(x, name="x")
            rank = convert_to_tensor(rank, name="rank")
            prefix = _prefix(message)
            if data is None:
                data = [prefix, f"Tensor {x.name} {words}", rank, "Received shape: ",
                        array_ops.shape(x)]
            try:
                return _rank_condition(x, rank, at_least, data, summarize)
            except ValueError as e:
                if e.args[0] != "Static rank condition failed":
                    raise
                raise ValueError(errors.with_hint(
                    f"{prefix}Tensor {x.name} {words} {e.args[2]}.  Received rank "
                    f"{e.args[1]}, shape {x.shape}",
                    tr("the shape of {name} is known while building the graph, so its rank "
                       "was checked then; reshape it or fix the expected rank.",
                       name=x.name))) from None
    check.__name__ = check.__qualname__ = opname
    check.__doc__ = (f"An op that fails unless ``x`` {words.replace('must have ', 'has ')} "
                     "``rank`` (ValueError when known statically).")
    return check


assert_rank = _rank_check("assert_rank", at_least=False)
assert_rank_at_least = _rank_check("assert_rank_at_least", at_least=True)


def assert_integer(x: Any, message: str | None = None, name: str | None = None) -> Operation:
    """Checks while building that ``x`` has an integer dtype (TypeError); returns a NoOp."""
    g = graph_of([x])
    with g.as_default(), g.name_scope(name or "assert_integer"):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_integer:
            raise TypeError(errors.with_hint(
                f'{_prefix(message)}Expected "x" to be integer type.  Found: {x.name} of '
                f"dtype <dtype: '{x.dtype.name}'>",
                tr("cast the tensor with tf.cast(x, {dtype}) or fix where it is made.",
                   dtype="tf.int32")))
        return no_op("statically_determined_was_integer")


def assert_scalar(tensor: Any, name: str | None = None, message: str | None = None) -> Tensor:
    """``tensor`` itself, after checking while building that its shape is ``[]``."""
    g = graph_of([tensor])
    with g.as_default(), g.name_scope(name or "assert_scalar") as scope:
        tensor = convert_to_tensor(tensor, name=scope)
        if tensor.shape.ndims != 0:
            raise ValueError(errors.with_hint(
                f"{_prefix(message)}Expected scalar shape for {tensor.name}, saw shape: "
                f"{tensor.shape}.",
                tr("a scalar has shape []; reduce the tensor or give its placeholder "
                   "shape=[].")))
        return tensor
