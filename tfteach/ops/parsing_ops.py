"""Parsing strings into numbers: ``tf.decode_csv`` (DecodeCSV) and ``tf.decode_raw`` (DecodeRaw).

``DecodeCSV`` splits each record of a string tensor into fields (``field_delim``, double
quotes around a field that holds the delimiter, ``""`` for a quote inside one) and gives one
tensor per column, of the records' shape, typed by that column's default; an empty field
takes its default, and a column whose default is empty is required. ``DecodeRaw`` reads the
bytes of each string as numbers of ``out_type`` (little-endian unless told otherwise): the
output's shape is the input's plus one axis of ``len(string) / itemsize``. Both run on the
CPU and have no gradient (strings have none).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops.common import convert_to_tensor, create_op

_NUMBERS = {"int32": int, "int64": int, "float32": float, "float64": float}


# ---- DecodeCSV ---------------------------------------------------------------------------------
def _split(record: bytes, delim: bytes, quotes: bool, op: Any, index: int) -> list[bytes]:
    if not quotes:
        return record.split(delim)
    fields, field, i, quoted = [], b"", 0, False
    while i < len(record):
        c = record[i:i + 1]
        if quoted and c == b'"' and record[i + 1:i + 2] == b'"':
            field, i = field + b'"', i + 2
            continue
        if c == b'"' and (quoted or field == b""):
            quoted = not quoted
        elif c == delim and not quoted:
            fields.append(field)
            field = b""
        else:
            field += c
        i += 1
    if quoted:
        raise errors.InvalidArgumentError(
            f"Quoted field has to end with quote followed by delim or end, record {index}",
            op=op, hint=tr("close every quote of a CSV field with a second quote."))
    return fields + [field]


def _field(text: bytes, default: np.ndarray, dtype: Any, op: Any, col: int, row: int,
           na_value: bytes) -> Any:
    if text == b"" or (na_value and text == na_value):
        if default.size == 0:
            raise errors.InvalidArgumentError(
                f"Field {col} is required but missing in record {row}!", op=op,
                hint=tr("give this column a default value in record_defaults, or fill the "
                        "field in the file."))
        return default.reshape(-1)[0]
    if dtype is dtypes.string:
        return text
    try:
        return _NUMBERS[dtype.name](text.decode())
    except ValueError:
        kind = "float" if dtype.is_floating else dtype.name
        raise errors.InvalidArgumentError(
            f"Field {col} in record {row} is not a valid {kind}: {text.decode(errors='replace')}",
            op=op, hint=tr("this column's default makes it {dtype}; give a default of the "
                           "column's real type (a string default reads any text).",
                           dtype=dtype.name)) from None


def _decode_csv_kernel(ctx: Any, records: Any, *defaults: Any) -> tuple:
    a = ctx.attrs
    recs = np.asarray(ctx.device.to_host(records), dtype=object)
    defs = [np.asarray(ctx.device.to_host(d)) for d in defaults]
    types = a["OUT_TYPE"]
    cols = [np.empty(recs.shape, dtype=t.np) for t in types]
    delim, na = a["field_delim"].encode(), a["na_value"].encode()
    select = list(a["select_cols"]) or list(range(len(types)))
    for row, record in enumerate(recs.ravel()):
        fields = _split(record, delim, a["use_quote_delim"], ctx.op, row)
        if max(select) >= len(fields) or (not a["select_cols"] and len(fields) != len(types)):
            raise errors.InvalidArgumentError(
                f"Expect {len(types)} fields but have {len(fields)} in record {row}",
                op=ctx.op, hint=tr("give one record default per column of the file."))
        for c, (pick, dt) in enumerate(zip(select, types, strict=True)):
            cols[c].reshape(-1)[row] = _field(fields[pick], defs[c], dt, ctx.op, c, row, na)
    return tuple(cols) if len(cols) > 1 else cols[0]


def _decode_csv_shape(op: Operation) -> list:
    return [(t, op.inputs[0].shape) for t in op.attrs["OUT_TYPE"]]


register_op("DecodeCSV", _decode_csv_shape, _decode_csv_kernel, gpu_types=frozenset())


def decode_csv(records: Any, record_defaults: list, field_delim: str = ",",
               use_quote_delim: bool = True, name: str | None = None, na_value: str = "",
               select_cols: list | None = None) -> list[Tensor]:
    """``tf.decode_csv``: one tensor per column, typed by ``record_defaults`` (each ``[]``
    for a required column or ``[value]``)."""
    recs = convert_to_tensor(records, dtype=dtypes.string, name="records")
    defaults = [convert_to_tensor(d, name="record_defaults") if not isinstance(d, list) or d
                else convert_to_tensor(np.zeros((0,), np.float32), name="record_defaults")
                for d in record_defaults]
    op = create_op("DecodeCSV", [recs] + defaults, {
        "OUT_TYPE": [d.dtype for d in defaults], "field_delim": field_delim,
        "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
        "select_cols": list(select_cols or [])}, name or "DecodeCSV")
    return list(op.outputs)


# ---- DecodeRaw ---------------------------------------------------------------------------------
def _decode_raw_kernel(ctx: Any, data: Any) -> np.ndarray:
    strings = np.asarray(ctx.device.to_host(data), dtype=object)
    dt = ctx.attrs["out_type"]
    order = "<" if ctx.attrs["little_endian"] else ">"
    np_type = dt.np.newbyteorder(order) if dt.np.itemsize > 1 else dt.np
    flat = [bytes(s) for s in strings.ravel()]
    size = len(flat[0]) if flat else 0
    for i, s in enumerate(flat):
        if len(s) != size:
            raise errors.InvalidArgumentError(
                f"DecodeRaw requires input strings to all be the same size, but element {i} "
                f"has size {len(s)} != {size}", op=ctx.op,
                hint=tr("every string must hold the same number of bytes (fixed-length "
                        "records)."))
    if size % dt.np.itemsize:
        raise errors.InvalidArgumentError(
            f"Input to DecodeRaw has length {size} that is not a multiple of "
            f"{dt.np.itemsize}, the size of {dt.name}", op=ctx.op,
            hint=tr("out_type must divide the record's length; check record_bytes and the "
                    "type the file was written with."))
    out = np.frombuffer(b"".join(flat), dtype=np_type).astype(dt.np)
    return out.reshape(strings.shape + (size // dt.np.itemsize,))


def _decode_raw_shape(op: Operation) -> list:
    s = op.inputs[0].shape
    dims = None if s.dims is None else list(s.dims) + [None]
    return [(op.attrs["out_type"], TensorShape(dims) if dims is not None else unknown_shape())]


register_op("DecodeRaw", _decode_raw_shape, _decode_raw_kernel, gpu_types=frozenset(),
            dtype_attr="out_type")
not_differentiable("DecodeCSV", "DecodeRaw")


def decode_raw(input_bytes: Any = None, out_type: Any = None, little_endian: bool = True,
               name: str | None = None, bytes: Any = None) -> Tensor:  # noqa: A002 - TF's name
    """``tf.decode_raw(bytes, out_type)``: the bytes of each string as numbers."""
    data = convert_to_tensor(input_bytes if input_bytes is not None else bytes,
                             dtype=dtypes.string, name="bytes")
    return create_op("DecodeRaw", [data], {"out_type": dtypes.as_dtype(out_type),
                                           "little_endian": bool(little_endian)},
                     name or "DecodeRaw").outputs[0]
