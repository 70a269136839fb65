"""Printing from a graph, as TF 1.x does when the op runs: ``tf.Print`` (Print: an identity
that writes ``message`` and each data tensor's first ``summarize`` values to stderr) and
``tf.print`` (StringFormat + PrintV2: an op with no output that prints its inputs, numpy
style, to stderr or stdout; run it or make it a control dependency).

Print's text is TF's ``Tensor::SummarizeValue`` (``logging_ops.summarize_value``);
StringFormat's is its ``print_v2`` form: the first and last ``summarize`` entries of each
dimension around ``...``, rows on their own lines, strings quoted. Print's ``first_n``
counts its runs per session (a table in the session's resources). Written to Python's
``sys.stderr``/``sys.stdout``, so a notebook shows the lines under the cell.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.registry import register_op, set_gradient
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, graph_of, no_output_fn
from tfteach.ops.logging_ops import element_text, summarize_value

__all__ = ["Print", "format_v2", "print_v2"]

_STREAMS = {"stderr": lambda: sys.stderr, "stdout": lambda: sys.stdout}


def _write(stream: str, text: str) -> None:
    if stream.startswith("file://"):
        with open(stream[len("file://"):], "a", encoding="utf-8") as f:
            f.write(text)
        return
    out = _STREAMS[stream]()
    out.write(text)
    out.flush()


# ---- Print (tf.Print) ---------------------------------------------------------------------
class _RunCount:
    """How many times a Print op with ``first_n`` has run in this session."""

    def __init__(self) -> None:
        self.runs = 0

    def release(self) -> None:
        """Nothing to free (a resource of the session's tables)."""


def _print_kernel(ctx: Any, x: Any, *data: Any) -> Any:
    first_n = ctx.attrs["first_n"]
    if first_n >= 0:
        count = ctx.resources.table("_print_counts").setdefault(ctx.op.name, _RunCount())
        count.runs += 1
        if count.runs > first_n:
            return x
    shown = "".join(f"[{summarize_value(ctx.device.to_host(d), ctx.attrs['summarize'])}]"
                    for d in data)
    _write("stderr", f"{ctx.attrs['message']}{shown}\n")
    return x


register_op("Print", lambda op: [(op.inputs[0].dtype, op.inputs[0].shape)], _print_kernel,
            gpu_types=frozenset(), stateful=True)
set_gradient("Print", lambda op, grad: [grad] + [None] * (len(op.inputs) - 1))


def Print(input_: Any, data: list, message: str | None = None, first_n: int | None = None,
          summarize: int | None = None, name: str | None = None) -> Tensor:
    """``input_`` unchanged; when it runs, ``message`` and ``data`` are printed to stderr."""
    g = graph_of([input_, *data])
    with g.as_default():
        x = convert_to_tensor(input_)
        ts = [convert_to_tensor(d) for d in data]
        return g.create_op("Print", [x, *ts], {
            "T": x.dtype, "U": [t.dtype for t in ts], "message": message or "",
            "first_n": -1 if first_n is None else int(first_n),
            "summarize": 3 if summarize is None else int(summarize)},
            name=name or "Print").outputs[0]


# ---- StringFormat + PrintV2 (tf.print) -----------------------------------------------------
def _v2_element(x: Any) -> str:
    text = element_text(x)
    return f'"{text}"' if isinstance(x, (bytes, np.bytes_, str)) else text


def _v2_dim(values: np.ndarray, summarize: int, depth: int) -> str:
    n = values.shape[0]
    cut = 0 <= summarize and 2 * summarize < n
    picked = list(range(summarize)) + [-1] + list(range(n - summarize, n)) if cut \
        else list(range(n))
    if values.ndim == 1:
        return "[" + " ".join("..." if i < 0 else _v2_element(values[i]) for i in picked) + "]"
    sep = "\n" + " " * (depth + 1)
    return "[" + sep.join("..." if i < 0 else _v2_dim(values[i], summarize, depth + 1)
                          for i in picked) + "]"


def format_v2(value: Any, summarize: int = 3) -> str:
    """``value`` as ``tf.print`` shows a tensor (TF's ``SummarizeValue`` in print_v2 form)."""
    value = np.asarray(value)
    if value.ndim == 0:
        return _v2_element(value[()])
    return "[]" if value.size == 0 else _v2_dim(value, summarize, 0)


def _string_format_kernel(ctx: Any, *inputs: Any) -> Any:
    parts = ctx.attrs["template"].split(ctx.attrs["placeholder"])
    if len(parts) != len(inputs) + 1:
        raise errors.InvalidArgumentError(
            f"num placeholders in template and num inputs must match: {len(parts) - 1} vs. "
            f"{len(inputs)}", op=ctx.op,
            hint=tr("the template needs one placeholder per tensor passed."))
    shown = [format_v2(ctx.device.to_host(t), ctx.attrs["summarize"]) for t in inputs]
    text = parts[0] + "".join(s + p for s, p in zip(shown, parts[1:], strict=True))
    return np.array(text.encode("utf-8"), dtype=object)


def _print_v2_kernel(ctx: Any, text: Any) -> None:
    value = np.asarray(ctx.device.to_host(text)).reshape(()).item()
    value = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    _write(ctx.attrs["output_stream"], value + ctx.attrs["end"])


register_op("StringFormat", lambda op: [(dtypes.string, TensorShape([]))],
            _string_format_kernel, gpu_types=frozenset(), dtype_attr="")
register_op("PrintV2", no_output_fn, _print_v2_kernel, gpu_types=frozenset(), dtype_attr="",
            stateful=True)


def _stream_name(output_stream: Any) -> str:
    if output_stream is None or output_stream in (sys.stderr, sys.__stderr__, "stderr"):
        return "stderr"
    if output_stream in (sys.stdout, sys.__stdout__, "stdout"):
        return "stdout"
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    raise ValueError(errors.with_hint(
        f"Unsupported output stream, logging level, or file.{output_stream}. Supported "
        "streams are sys.stdout, sys.stderr, or a file path prefixed by 'file://'.",
        tr("pass output_stream=sys.stderr, sys.stdout or 'file:///path/to/file'.")))


class _Slot:
    """Stands for a tensor inside a printed Python structure: ``str`` shows the template's
    placeholder where the tensor's text will go."""

    def __init__(self, mark: str) -> None:
        self.mark = mark

    def __repr__(self) -> str:
        return self.mark


def _template_part(x: Any, mark: str, tensors: list) -> str:
    """``x``'s text in the template; its tensors (nested in lists, tuples and dicts too) are
    appended to ``tensors`` and shown as ``mark``."""
    def slots(v: Any) -> Any:
        if isinstance(v, Tensor):
            tensors.append(v)
            return _Slot(mark)
        if isinstance(v, (list, tuple)):
            return type(v)(slots(i) for i in v)
        if isinstance(v, dict):
            return {k: slots(i) for k, i in v.items()}
        return v
    return str(slots(x))


def print_v2(*inputs: Any, output_stream: Any = None, summarize: int | None = 3,
             sep: str = " ", end: str = "\n", name: str | None = None) -> Operation:
    """An op that prints ``inputs`` (Python values as ``str``, tensors numpy style, also
    inside lists, tuples and dicts) when run, to ``output_stream``: ``sys.stderr`` (the
    default), ``sys.stdout`` or ``'file://path'``."""
    stream = _stream_name(output_stream)
    probe = sep.join(_template_part(x, "", []) for x in inputs)
    mark = "{}" if "{}" not in probe else "{tfteach_placeholder}"
    tensors: list = []
    template = sep.join(_template_part(x, mark, tensors) for x in inputs)
    g = graph_of(tensors)
    with g.as_default():
        text = g.create_op("StringFormat", tensors, {
            "T": [t.dtype for t in tensors], "template": template, "placeholder": mark,
            "summarize": 3 if summarize is None else int(summarize)},
            name="StringFormat").outputs[0]
        return g.create_op("PrintV2", [text], {"output_stream": stream, "end": end},
                           name=name or "PrintV2")
