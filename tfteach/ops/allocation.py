"""Sizes that kernels check before they allocate from attrs or shape inputs.

Ops whose output size comes from a number the learner typed (Fill, zeros, OneHot's
``depth``, Tile's ``multiples``, Reshape's shape) check it before allocating, so that a
typo is an error, never a process killed by the kernel's out-of-memory killer:
- ``shape_dtype(shape)``: a Python shape is int32 unless a value needs int64 (as TF infers);
- ``element_count(op, dims, what)``: the product of ``dims`` as a Python int, or
  InvalidArgumentError (ValueError while building) past 2**63 - 1, in TF's wording;
- ``shape_vector(ctx, dims)``: a Shape op's int32/int64 output, InvalidArgumentError where
  int32 cannot hold a dimension;
- ``guard_allocation(ctx, shape, dtype, extra)``: ResourceExhaustedError with TF's
  "OOM when allocating tensor with shape[...]" when the output (plus ``extra`` bytes of
  scratch) is larger than the memory this machine has available.
Imports: numpy, the framework, errors, i18n and ``ops.common``.
"""
from __future__ import annotations

import math
import os
from typing import Any, Sequence

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.i18n import tr
from tfteach.ops.common import shape_error

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def shape_dtype(shape: Any) -> dtypes.DType | None:
    """int32 for a shape given as Python numbers that all fit int32, else int64 (a
    shape tensor keeps its own dtype; None for a list holding tensors, packed with
    theirs)."""
    if isinstance(shape, Tensor):
        return shape.dtype
    try:
        values = [int(d) for d in np.ravel(np.asarray(shape, dtype=object))]
    except (TypeError, ValueError):
        return None     # a list holding a tensor: convert_to_tensor packs it
    fits = all(-INT32_MAX - 1 <= d <= INT32_MAX for d in values)
    return dtypes.int32 if fits else dtypes.int64


def element_count(op: Any, dims: Sequence[int], what: str, building: bool = False) -> int:
    """The number of elements of shape ``dims``; InvalidArgumentError past 2**63 - 1
    (``building``: a graph-building ValueError, as TF's shape functions raise)."""
    count = math.prod(int(d) for d in dims if int(d) != -1)
    if count > INT64_MAX:
        shape = ", ".join(str(int(d)) for d in dims)
        if building:
            raise shape_error(op, f"Shape [{shape}] {what}")
        raise errors.InvalidArgumentError(
            f"Shape [{shape}] {what}\n\t [[Node: {op.summary()}]]", op=op,
            hint=tr("the shape [{shape}] has more elements than any machine holds; check "
                    "the numbers you passed (a product of dimensions, or a value meant as "
                    "an index?).", shape=shape))
    return count


def no_negative_dimension(op: Any, dims: Sequence[int]) -> None:
    """InvalidArgumentError, as TF's kernels give, for a shape given at run time with a
    negative dimension."""
    if min(dims, default=0) < 0:
        raise errors.InvalidArgumentError(
            f"Dimension {min(dims)} must be >= 0\n\t [[Node: {op.summary()}]]", op=op,
            hint=tr("the shape fed to '{op}' has a negative dimension ({shape}); a size is "
                    "a count of elements: 0 or more.", op=op.name, shape=list(dims)))


def shape_vector(ctx: Any, dims: Sequence[int]) -> np.ndarray:
    """A Shape op's output: ``dims`` as its ``out_type``; an int32 output that cannot hold a
    dimension is InvalidArgumentError (TF's kernel), never a wrapped number."""
    out = ctx.attrs.get("out_type", dtypes.int32)
    for i, d in enumerate(dims):
        if out == dtypes.int32 and d > INT32_MAX:
            raise errors.InvalidArgumentError(
                f"Shape output type is 32-bit  but dim {i} is {d}", op=ctx.op,
                hint=tr("ask for the shape as int64: tf.shape(x, out_type=tf.int64)."))
    return np.array(dims, dtype=out.np)


def available_bytes() -> int:
    """The memory this machine can still give (MemAvailable, else its physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return INT64_MAX


def guard_allocation(ctx: Any, shape: Sequence[int], dtype: Any, extra: int = 0) -> None:
    """ResourceExhaustedError when a tensor of ``shape`` and ``dtype`` (plus ``extra``
    bytes of scratch) cannot fit in the memory available (host memory for every device:
    virtual GPUs live there, and a real GPU's kernel reports its own OOM)."""
    dt = dtypes.as_dtype(dtype)
    asked = math.prod(int(d) for d in shape) * np.dtype(dt.np).itemsize + extra
    free = available_bytes()
    if asked <= free:
        return
    op, device = ctx.op, ctx.device.name
    dims = ",".join(str(int(d)) for d in shape)
    raise errors.ResourceExhaustedError(
        f"OOM when allocating tensor with shape[{dims}] and type {dt.tf_name} on {device} "
        f"by allocator {getattr(ctx.device.memory, 'allocator_name', 'cpu')}: {asked} bytes "
        f"asked for, "
        f"{free} available\n\t [[Node: {op.summary()}]]", op=op,
        hint=tr("'{name}' asked for {asked} bytes on {device}, more than this machine has "
                "free ({free} bytes): check the shape, depth or multiples you passed, or "
                "work in smaller batches.", name=op.name, asked=asked, device=device,
                free=free))
