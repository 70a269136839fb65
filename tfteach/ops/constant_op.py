"""Const: the op a Python value or NumPy array becomes (TF's ``constant_op``).

The lowest op module: ``common.convert_to_tensor`` builds a ``Const`` for anything that is
not a tensor yet, so this module needs only the framework.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.registry import ALL_TYPES, register_op
from tfteach.framework.tensor_shape import TensorShape, as_shape


# ---- Const ---------------------------------------------------------------------------------
def _const_shape(op):
    return [(op.attrs["dtype"], TensorShape(op.attrs["value"].shape))]


def _const_kernel(ctx):
    return ctx.device.from_host(ctx.attrs["value"])


register_op("Const", _const_shape, _const_kernel, gpu_types=ALL_TYPES, dtype_attr="dtype",
            copyable=True, idle=True)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const",
             verify_shape: bool = False) -> Tensor:
    """A constant tensor; ``shape=`` broadcasts a scalar or reshapes a list, as TF 1.x."""
    dt = dtypes.as_dtype(dtype) if dtype is not None else dtypes.infer_dtype(value)
    arr = dtypes.to_numpy(value, dt)
    if shape is not None:
        arr = _fit_shape(arr, as_shape(shape).as_list(), verify_shape)
    arr = np.array(arr, dtype=dt.np, copy=True)
    arr.setflags(write=False)
    return get_default_graph().create_op("Const", [], {"value": arr, "dtype": dt},
                                         name=name).outputs[0]


def _fit_shape(arr: np.ndarray, shape: list, verify: bool) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    if arr.shape == tuple(shape):
        return arr
    if verify:
        raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {arr.shape}.")
    if arr.size == 1:
        return np.broadcast_to(arr.reshape(()), shape)
    if arr.size == n:
        return arr.reshape(shape)
    if arr.size < n:
        flat = np.concatenate([arr.ravel(), np.repeat(arr.ravel()[-1:], n - arr.size)])
        return flat.reshape(shape)
    raise ValueError(f"Too many elements provided. Needed at most {n}, but received {arr.size}")
