"""Slices of a tensor in a checkpoint: how TF saves a partitioned variable.

A variable saved in parts (``tfteach.ops.partitioned_variables``) has, in the bundle index,

- one entry under its full name (``emb``) with the dtype, the *full* shape and one
  ``TensorSliceProto`` per part (an extent per axis: start, length; an extent with no
  length is the whole axis), and no data of its own;
- one ordinary entry per part, with the part's data, under a key TF builds with
  ``EncodeTensorNameSlice``: the OrderedCode encoding of 0, the name, the rank and each
  axis' start and length (``\\x00emb\\x00\\x01\\x01\\x02\\x80\\xac\\x80\\x83`` is rows 0..43
  of a 2-D ``emb``). Those keys start with ``\\x00``, so they sort before every name.

A reader puts the slices back into the full tensor (``assemble``); a restore then cuts
whatever part it needs out of it, so a checkpoint saved in 3 parts restores into 2 parts or
into one whole variable, as TF's does.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

Extent = tuple[int, int]        # (start, length); length -1 is "to the end of the axis"
Slice = tuple[Extent, ...]


# ---- TF's OrderedCode (tensorflow/core/lib/strings/ordered_code.cc) ---------------------------
def _num_increasing(value: int) -> bytes:
    """An unsigned number: its length in one byte, then its big-endian bytes."""
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(raw)]) + raw


def _string(text: bytes) -> bytes:
    """A string: 0x00 -> 00 FF, 0xFF -> FF 00, then the terminator 00 01."""
    out = bytearray()
    for byte in text:
        out += {0: b"\x00\xff", 0xFF: b"\xff\x00"}.get(byte, bytes([byte]))
    return bytes(out) + b"\x00\x01"


def _signed_increasing(value: int) -> bytes:
    """A signed number in ``n`` bytes of two's complement whose first bits say ``n``."""
    magnitude = ~value if value < 0 else value
    n = min(10, max(1, -(-(magnitude.bit_length() + 1) // 7)))
    raw = bytearray((value & ((1 << (8 * n)) - 1)).to_bytes(n, "big"))
    raw[0] ^= (0xFF << (8 - min(n, 8))) & 0xFF
    if n > 8:
        raw[1] ^= (0xFF << (16 - n)) & 0xFF
    return bytes(raw)


def slice_key(name: str, extents: Slice) -> bytes:
    """The bundle key under which TF stores slice ``extents`` of tensor ``name``."""
    key = _num_increasing(0) + _string(name.encode()) + _num_increasing(len(extents))
    for start, length in extents:
        key += _signed_increasing(start) + _signed_increasing(length)
    return key


# ---- slices as numpy sees them -----------------------------------------------------------------
def extents_of(offset: Sequence[int], shape: Sequence[int]) -> Slice:
    """The extents of a part at ``offset`` with ``shape`` (every length explicit, as TF's
    ``SaveSliceInfo.spec`` gives them)."""
    return tuple((int(o), int(s)) for o, s in zip(offset, shape, strict=True))


def index_of(extents: Slice) -> tuple[slice, ...]:
    return tuple(slice(start, None if length < 0 else start + length)
                 for start, length in extents)


def assemble(name: str, dtype: str, full_shape: Sequence[int], slices: Sequence[Slice],
             stored: Mapping[bytes, np.ndarray]) -> np.ndarray:
    """The full tensor ``name`` from its stored slices (a missing slice is a ValueError)."""
    full = np.zeros(tuple(full_shape), dtype=np.dtype(dtype))
    for extents in slices:
        key = slice_key(name, extents)
        if key not in stored:
            raise ValueError(f"slice {list(extents)} of tensor '{name}' is not in the checkpoint")
        full[index_of(extents)] = stored[key]
    return full
