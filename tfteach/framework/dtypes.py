"""Data types, as TensorFlow 1.x names them.

A ``DType`` wraps a NumPy dtype and knows TF's names: its Python name (``float32``) and its
runtime name in error messages (``float``). The module holds one immutable ``DType`` per
supported type; ``as_dtype`` maps anything dtype-like onto them.

TF's rule of no implicit promotion lives in ``convert_scalar``: a Python number adopts a
tensor's dtype if it fits exactly, and two tensors of different dtypes never mix.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np


class DType:
    """One element type: ``tf.float32`` and friends."""

    __slots__ = ("name", "tf_name", "enum", "_np")

    def __init__(self, name: str, tf_name: str, enum: str, np_type: Any) -> None:
        self.name = name
        self.tf_name = tf_name
        self.enum = enum
        self._np = np.dtype(np_type)

    @property
    def as_numpy_dtype(self) -> Any:
        """The NumPy type; quantized types are TF's one-field structured dtypes."""
        return self._np if self._np.names else self._np.type

    @property
    def np(self) -> np.dtype:
        """The NumPy dtype object (fast path for kernels)."""
        return self._np

    @property
    def as_datatype_enum(self) -> int:
        """TF's ``DataType`` number (``types.proto``)."""
        return _ENUM_NUMBERS[self.enum]

    @property
    def is_floating(self) -> bool:
        return self._np.kind == "f" or self.name == "bfloat16"

    @property
    def is_integer(self) -> bool:
        return self._np.kind in "iu"

    @property
    def is_complex(self) -> bool:
        return self._np.kind == "c"

    @property
    def is_quantized(self) -> bool:
        return self.name in _QUANTIZED

    @property
    def is_unsigned(self) -> bool:
        return self._np.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self._np.kind == "b"

    @property
    def is_numeric(self) -> bool:
        return self._np.kind in "fiu"

    @property
    def size(self) -> int:
        return self._np.itemsize if self._np.kind != "O" else 0     # TF: strings are 0

    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def real_dtype(self) -> "DType":
        """The type of the real part (``float32`` for ``complex64``); itself otherwise."""
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    @property
    def min(self):
        return self._limits()[0]

    @property
    def max(self):
        return self._limits()[1]

    def _limits(self) -> tuple:
        if self.name == "bfloat16":
            return -_BFLOAT16_MAX, _BFLOAT16_MAX
        if self._np.kind == "f":
            return np.finfo(self._np).min, np.finfo(self._np).max
        if self._np.kind in "iu":
            return np.iinfo(self._np).min, np.iinfo(self._np).max
        raise TypeError(f"Cannot find minimum value of {self!r}.")

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __reduce__(self):
        return (as_dtype, (self.name,))


def _bfloat16_numpy() -> Any:
    """``ml_dtypes.bfloat16`` (what TF uses) where it is installed; else TF's
    quantized-style stand-in, a one-field 2-byte structured dtype (no arithmetic)."""
    try:
        import ml_dtypes
    except ImportError:
        return [("bfloat16", "<u2")]
    return ml_dtypes.bfloat16


_BFLOAT16_MAX = 3.3895313892515355e+38
_QUANTIZED = frozenset({"qint8", "quint8", "qint16", "quint16", "qint32"})
_ENUM_NUMBERS = {"DT_FLOAT": 1, "DT_DOUBLE": 2, "DT_INT32": 3, "DT_UINT8": 4, "DT_INT16": 5,
                 "DT_INT8": 6, "DT_STRING": 7, "DT_COMPLEX64": 8, "DT_INT64": 9, "DT_BOOL": 10,
                 "DT_QINT8": 11, "DT_QUINT8": 12, "DT_QINT32": 13, "DT_BFLOAT16": 14,
                 "DT_QINT16": 15, "DT_QUINT16": 16, "DT_UINT16": 17, "DT_COMPLEX128": 18,
                 "DT_HALF": 19, "DT_RESOURCE": 20, "DT_VARIANT": 21, "DT_UINT32": 22, "DT_UINT64": 23}

float16 = DType("float16", "half", "DT_HALF", np.float16)
float32 = DType("float32", "float", "DT_FLOAT", np.float32)
float64 = DType("float64", "double", "DT_DOUBLE", np.float64)
int32 = DType("int32", "int32", "DT_INT32", np.int32)
int64 = DType("int64", "int64", "DT_INT64", np.int64)
bool_ = DType("bool", "bool", "DT_BOOL", np.bool_)
string = DType("string", "string", "DT_STRING", np.object_)
half = float16
double = float64
int8 = DType("int8", "int8", "DT_INT8", np.int8)
int16 = DType("int16", "int16", "DT_INT16", np.int16)
uint8 = DType("uint8", "uint8", "DT_UINT8", np.uint8)
uint16 = DType("uint16", "uint16", "DT_UINT16", np.uint16)
uint32 = DType("uint32", "uint32", "DT_UINT32", np.uint32)
uint64 = DType("uint64", "uint64", "DT_UINT64", np.uint64)
complex64 = DType("complex64", "complex64", "DT_COMPLEX64", np.complex64)
complex128 = DType("complex128", "complex128", "DT_COMPLEX128", np.complex128)
bfloat16 = DType("bfloat16", "bfloat16", "DT_BFLOAT16", _bfloat16_numpy())
qint8 = DType("qint8", "qint8", "DT_QINT8", [("qint8", "i1")])
quint8 = DType("quint8", "quint8", "DT_QUINT8", [("quint8", "u1")])
qint16 = DType("qint16", "qint16", "DT_QINT16", [("qint16", "<i2")])
quint16 = DType("quint16", "quint16", "DT_QUINT16", [("quint16", "<u2")])
qint32 = DType("qint32", "qint32", "DT_QINT32", [("qint32", "<i4")])
# What a tf.data dataset op gives (a Python object on the host); no tensor of data has it.
variant = DType("variant", "variant", "DT_VARIANT", np.object_)
# A handle to a resource a kernel owns (a TensorArray's ``handle``), as TF's graphs type it.
resource = DType("resource", "resource", "DT_RESOURCE", np.object_)

ALL = (float16, float32, float64, int32, int64, bool_, string, int8, int16, uint8, uint16, uint32,
       uint64, complex64, complex128, bfloat16, qint8, quint8, qint16, quint16, qint32)
FLOATS = frozenset({float16, float32, float64})
NUMERIC = frozenset({float16, float32, float64, int32, int64})
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"half": float16, "double": float64, "float": float32, "int": int32})
_BY_NP = {d.np: d for d in ALL}
_BY_ENUM = {d.as_datatype_enum: d for d in ALL}
_BY_NAME["variant"] = _BY_ENUM[variant.as_datatype_enum] = variant
_BY_NAME["resource"] = _BY_ENUM[resource.as_datatype_enum] = resource


def as_dtype(value: Any) -> DType:
    """Convert a DType, a NumPy dtype, a Python type or a name to a ``DType``."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is str or value is bytes:
        return string
    if value is bool:
        return bool_
    if value is int:
        return int32
    if value is float:
        return float32
    if value is complex:
        return complex128
    if isinstance(value, (int, np.integer)) and int(value) in _BY_ENUM:     # a DataType enum
        return _BY_ENUM[int(value)]
    try:
        npd = np.dtype(value)
    except TypeError:
        npd = None
    if npd is not None:
        if npd.kind in "US":
            return string
        if npd in _BY_NP:
            return _BY_NP[npd]
    raise TypeError(f"Cannot convert value {value!r} to a TensorFlow DType. "
                    f"Supported: {', '.join(d.name for d in ALL)}.")


def infer_dtype(value: Any) -> DType:
    """The dtype TF infers for a Python or NumPy value (Python floats -> float32)."""
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        return as_dtype(value.dtype)
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        return int32 if -2**31 <= value < 2**31 else int64
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        return complex128
    if isinstance(value, (str, bytes)):
        return string
    if isinstance(value, (list, tuple)):
        arr = np.asarray(value)
        if arr.dtype == object and any(_is_dimension(x) for x in arr.ravel()):
            raise _unconvertible(value)
        if arr.dtype.kind == "f":
            return float32
        if arr.dtype.kind in "iu":
            return int32 if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31) else int64
        return as_dtype(arr.dtype)
    if _is_dimension(value):
        raise _unconvertible(value)
    raise TypeError(f"Cannot infer a dtype for {value!r} of type {type(value).__name__}.")


def _unconvertible(value: Any) -> TypeError:
    """TF's error for a constant whose dtype it cannot infer from Dimensions."""
    return TypeError(f"Failed to convert elements of {value} to Tensor. Consider casting "
                     "elements to a supported type. See "
                     "https://www.tensorflow.org/api_docs/python/tf/dtypes for supported TF "
                     "dtypes.")


def to_numpy(value: Any, dtype: DType) -> np.ndarray:
    """Convert a Python/NumPy value to an array of ``dtype``, refusing lossy conversions.

    Raises TF's TypeError ("Expected int32, got 2.5 of type 'float' instead.").
    """
    if dtype is string:   # TF strings are bytes: 'hi' comes back as b'hi'
        arr = np.asarray(value, dtype=object)
        flat = [x.encode() if isinstance(x, str) else x for x in arr.ravel()]
        out = np.empty(arr.shape, dtype=object)
        out.ravel()[:] = flat if flat else out.ravel()
        return out
    arr = np.asarray(value)
    if arr.dtype == object and dtype.is_integer:
        arr = _indices(arr)
    if arr.dtype.kind in "US" or arr.dtype == object:
        raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                        f"'{type(value).__name__}' instead.")
    out = arr.astype(dtype.np, copy=False)
    if arr.dtype.kind == "f" and (dtype.is_integer or dtype.is_bool) and arr.size:
        if not np.array_equal(out.astype(arr.dtype), arr):
            raise TypeError(f"Expected {dtype.name}, got {value!r} of type "
                            f"'{type(value).__name__}' instead.")
    return out


def _is_dimension(x: Any) -> bool:
    return type(x).__name__ == "Dimension" and hasattr(x, "value")


def _indices(arr: np.ndarray) -> np.ndarray:
    """An object array of integers and known ``Dimension`` sizes (``[-1, shape[1]]``) as
    int64; the array as it is when an element is neither."""
    try:
        return np.array([operator.index(x) for x in arr.ravel()],
                        dtype=np.int64).reshape(arr.shape)
    except (TypeError, OverflowError):
        return arr
