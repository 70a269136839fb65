"""NumPy arrays and shapes as TensorFlow's ``TensorProto`` and ``TensorShapeProto``.

``make_tensor_proto`` writes what TF's ``tf.make_tensor_proto`` writes (byte for byte): int
and float arrays of more than one element as raw little-endian bytes (``tensor_content``);
a single value, and bool and complex values, in the typed field (``float_val``,
``int_val``, ``half_val`` as the float16 bit pattern, ...); strings in ``string_val``.
``to_ndarray`` reads any of those, including TF's short form where fewer values than
elements are given and the last one fills the rest.

``DATATYPE_OF`` / ``numpy_dtype`` map NumPy dtypes to TF's ``DataType`` numbers and back.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb
from tfteach.framework.tensor_shape import TensorShape, as_shape

DATATYPE_OF: dict[np.dtype, int] = {np.dtype(k): v for k, v in {
    np.float16: pb.DT_HALF, np.float32: pb.DT_FLOAT, np.float64: pb.DT_DOUBLE,
    np.int8: pb.DT_INT8, np.int16: pb.DT_INT16, np.int32: pb.DT_INT32, np.int64: pb.DT_INT64,
    np.uint8: pb.DT_UINT8, np.uint16: pb.DT_UINT16, np.uint32: pb.DT_UINT32,
    np.uint64: pb.DT_UINT64, np.bool_: pb.DT_BOOL, np.complex64: pb.DT_COMPLEX64,
    np.complex128: pb.DT_COMPLEX128}.items()}
_NUMPY_OF = {v: k for k, v in DATATYPE_OF.items()}

# The TensorProto field that holds single values of each DataType.
_VAL_FIELD = {pb.DT_FLOAT: "float_val", pb.DT_DOUBLE: "double_val", pb.DT_INT32: "int_val",
              pb.DT_INT16: "int_val", pb.DT_INT8: "int_val", pb.DT_UINT8: "int_val",
              pb.DT_UINT16: "int_val", pb.DT_HALF: "half_val", pb.DT_INT64: "int64_val",
              pb.DT_BOOL: "bool_val", pb.DT_UINT32: "uint32_val", pb.DT_UINT64: "uint64_val",
              pb.DT_COMPLEX64: "scomplex_val", pb.DT_COMPLEX128: "dcomplex_val"}


def datatype_name(datatype: int) -> str:
    """``DT_FLOAT`` for 1, ...; the number itself when unknown."""
    try:
        return pb.DataType.Name(datatype)
    except ValueError:
        return str(datatype)


def numpy_dtype(datatype: int) -> np.dtype:
    """The NumPy dtype of a TF ``DataType`` (ValueError for one NumPy lacks, e.g. bfloat16)."""
    if datatype == pb.DT_STRING:
        return np.dtype(object)
    try:
        return _NUMPY_OF[datatype]
    except KeyError:
        raise ValueError(f"tfteach has no NumPy dtype for {datatype_name(datatype)}") from None


def datatype_of(dtype: Any) -> int:
    """The TF ``DataType`` of a tfteach DType or NumPy dtype."""
    if isinstance(dtype, dtypes.DType):
        return getattr(pb, dtype.enum)
    np_dtype = np.dtype(dtype)
    if np_dtype == object:
        return pb.DT_STRING
    try:
        return DATATYPE_OF[np_dtype.newbyteorder("=")]
    except KeyError:
        raise ValueError(f"TensorFlow has no DataType for NumPy dtype {np_dtype}") from None


def shape_proto(shape: Any, out: pb.TensorShapeProto | None = None) -> pb.TensorShapeProto:
    """A TensorShapeProto of a TensorShape, list or tuple (None dimensions are -1)."""
    out = pb.TensorShapeProto() if out is None else out
    shape = as_shape(shape)
    if shape.dims is None:
        out.unknown_rank = True
    else:
        for d in shape.dims:
            out.dim.add(size=-1 if d is None else d)
    return out


def shape_from_proto(proto: pb.TensorShapeProto) -> TensorShape:
    if proto.unknown_rank:
        return TensorShape(None)
    return TensorShape([None if d.size < 0 else d.size for d in proto.dim])


def make_tensor_proto(value: Any, dtype: Any = None) -> pb.TensorProto:
    """A TensorProto holding the array ``value`` (of ``dtype`` when given)."""
    array = np.asarray(value) if dtype is None else np.asarray(value, dtype=dtype)
    proto = pb.TensorProto(dtype=datatype_of(array.dtype))
    proto.tensor_shape.SetInParent()      # present even for a scalar, as TF writes it
    shape_proto(array.shape, proto.tensor_shape)
    if proto.dtype == pb.DT_STRING:
        proto.string_val.extend(x.encode() if isinstance(x, str) else bytes(x)
                                for x in array.ravel())
    elif array.size > 1 and array.dtype.kind in "iuf":
        proto.tensor_content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")) \
            .tobytes()
    else:
        _set_vals(proto, array.ravel())
    return proto


def _set_vals(proto: pb.TensorProto, flat: np.ndarray) -> None:
    field = getattr(proto, _VAL_FIELD[proto.dtype])
    if proto.dtype == pb.DT_HALF:
        field.extend(int(x) for x in flat.astype("<f2").view("<u2"))
    elif flat.dtype.kind == "c":
        field.extend(float(p) for x in flat for p in (x.real, x.imag))
    else:
        field.extend(flat.tolist())


def to_ndarray(proto: pb.TensorProto) -> np.ndarray:
    """The array a TensorProto holds (ValueError when its values do not fit its shape)."""
    dtype = numpy_dtype(proto.dtype)
    shape = shape_from_proto(proto.tensor_shape)
    if shape.dims is None or None in shape.dims:
        raise ValueError("a TensorProto's shape must be fully defined")
    dims, size = tuple(shape.dims), int(np.prod(shape.dims, dtype=np.int64))
    if proto.dtype == pb.DT_STRING:
        flat = np.empty(len(proto.string_val), dtype=object)
        flat[:] = list(proto.string_val)
    elif proto.tensor_content:
        flat = np.frombuffer(proto.tensor_content, dtype.newbyteorder("<")).astype(dtype)
    else:
        flat = _vals(proto, dtype)
    if len(flat) == size:
        return flat.reshape(dims).copy()
    if len(flat) == 0 or len(flat) > size or proto.tensor_content:
        raise ValueError(f"a TensorProto of shape {list(dims)} holds {len(flat)} values")
    return np.concatenate([flat, np.repeat(flat[-1:], size - len(flat))]).reshape(dims)


def _vals(proto: pb.TensorProto, dtype: np.dtype) -> np.ndarray:
    values = list(getattr(proto, _VAL_FIELD[proto.dtype]))
    if proto.dtype == pb.DT_HALF:
        return np.array(values, dtype="<u2").view("<f2").astype(dtype)
    if dtype.kind == "c":
        pairs = np.array(values, dtype=np.float64).reshape(-1, 2)
        return (pairs[:, 0] + 1j * pairs[:, 1]).astype(dtype)
    return np.array(values, dtype=dtype)
