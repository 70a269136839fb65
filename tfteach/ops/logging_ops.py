"""``Assert``: an op that fails the step when its condition is false (``tf.Assert``).

The kernel raises InvalidArgumentError with TF's text, ``assertion failed: [d0] [d1] ...``,
each data tensor summarised as TF's ``Tensor::SummarizeValue`` does: at most ``summarize``
(default 3) elements, nested brackets for rank 2 and up, ``...`` where it stops, bools as
``0``/``1``, floats as C's ``%g`` (6 significant digits, 9 if that does not round-trip; 15
and 17 for float64). ``tf.Assert`` builds it as TF 1.x does: when every data tensor is a
string or int32 the op alone, else guarded by a cond (``AssertGuard``) so the data are
only read when the condition fails; it returns the op to use in ``control_dependencies``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation
from tfteach.framework.registry import ALL_TYPES, register_op
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, graph_of, no_output_fn
from tfteach.ops.cond_ops import cond
from tfteach.ops.control_ops import no_op

__all__ = ["Assert", "element_text", "summarize_value"]


def element_text(x: Any) -> str:
    """One element as TF prints it (strings as text, bools as 0/1, floats as %g)."""
    if isinstance(x, (bytes, np.bytes_)):
        return x.decode("utf-8", "replace")
    if isinstance(x, (bool, np.bool_)):
        return str(int(x))
    if isinstance(x, (np.floating, float)):
        short, long_ = (6, 9) if np.asarray(x).dtype.itemsize <= 4 else (15, 17)
        text = f"{x:.{short}g}"
        return text if type(x)(float(text)) == x else f"{x:.{long_}g}"
    return str(x)


def _one_dim(values: np.ndarray, dim: int, limit: int, done: list[int]) -> str:
    """TF's ``PrintOneDim``: ``done[0]`` counts the elements printed so far."""
    if done[0] >= limit:
        return ""
    shape, out = values.shape, []
    if dim == len(shape) - 1:
        for i in range(shape[dim]):
            if done[0] >= limit:
                return " ".join(out) + ("..." if dim != 0 else "")
            out.append(element_text(values.flat[done[0]]))
            done[0] += 1
        return " ".join(out)
    text = ""
    for _ in range(shape[dim]):
        opened = done[0] < limit
        text += ("[" if opened else "") + _one_dim(values, dim + 1, limit, done)
        text += "]" if done[0] < limit or opened else ""
    return text


def summarize_value(value: np.ndarray, summarize: int = 3) -> str:
    """``value`` as TF prints a tensor in an assertion message."""
    value = np.asarray(value)
    limit = value.size if summarize < 0 else min(summarize, value.size)
    if value.ndim == 0:
        text = " ".join(element_text(value.flat[i]) for i in range(limit))
    else:
        text = _one_dim(value, 0, limit, [0])
    return text + ("..." if value.size > limit else "")


def _assert_kernel(ctx: Any, condition: Any, *data: Any) -> None:
    cond_value = np.asarray(ctx.device.to_host(condition))
    if cond_value.ndim != 0:
        raise errors.InvalidArgumentError(
            f"In[0] should be a scalar: [{','.join(map(str, cond_value.shape))}]", op=ctx.op,
            hint=tr("the condition of tf.Assert is one bool: reduce it to a scalar "
                    "first."))
    if bool(cond_value):
        return None
    shown = " ".join(f"[{summarize_value(ctx.device.to_host(d), ctx.attrs['summarize'])}]"
                     for d in data)
    raise errors.InvalidArgumentError(
        f"assertion failed: {shown}", op=ctx.op,
        hint=tr("{name} checks a condition your program asserts; it was false for the "
                "values fed in this step.", name=ctx.op.name))


register_op("Assert", no_output_fn, _assert_kernel, gpu_types=ALL_TYPES, dtype_attr="",
            stateful=True)


def _assert_op(condition: Any, data: list, summarize: int | None) -> Operation:
    g = graph_of([condition, *data])
    with g.as_default(), g.name_scope("Assert") as scope:
        c = convert_to_tensor(condition, dtype=dtypes.bool_)
        ts = [convert_to_tensor(d, name=f"data_{i}") for i, d in enumerate(data)]
        return g.create_op("Assert", [c, *ts], {"T": [t.dtype for t in ts], "summarize":
                           3 if summarize is None else summarize}, name=scope)


def Assert(condition: Any, data: list, summarize: int | None = None,
           name: str | None = None) -> Operation:
    """An op that fails with ``data`` in its message when ``condition`` is false."""
    g = graph_of([condition, *data])
    with g.as_default(), g.name_scope(name or "Assert"):
        xs = [convert_to_tensor(d) for d in data]
        if all(x.dtype in (dtypes.string, dtypes.int32) for x in xs):
            return _assert_op(condition, data, summarize)
        c = convert_to_tensor(condition, name="Condition")
        return cond(c, no_op, lambda: _assert_op(c, data, summarize), name="AssertGuard").op
