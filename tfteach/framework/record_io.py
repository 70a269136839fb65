"""TensorFlow's checksums and record framing: masked CRC32C and TFRecord files.

TensorFlow checks its files with CRC32C (the Castagnoli polynomial, computed here by the
``google-crc32c`` package, in C) and stores the checksum *masked*, so that a checksum of
data that itself holds checksums is not a checksum of zeros::

    masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8      (mod 2**32)

A TFRecord file (event files for TensorBoard, ``tf.data`` record files) is a sequence of
records, each::

    uint64 length             little-endian
    uint32 masked_crc32c(length's 8 bytes)
    byte   data[length]
    uint32 masked_crc32c(data)
"""
from __future__ import annotations

import struct
from typing import IO, Iterator

import google_crc32c
import numpy as np

from tfteach.errors import DataLossError
from tfteach.i18n import tr

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF


def crc32c(data: bytes | bytearray | memoryview | np.ndarray, crc: int = 0) -> int:
    """CRC32C of ``data``, continuing from ``crc`` (the CRC of the bytes before it).

    A NumPy array is read in place (its raw bytes, without a copy)."""
    if not isinstance(data, (bytes, np.ndarray)):
        data = bytes(data)
    return google_crc32c.extend(crc, data)


def mask(crc: int) -> int:
    """TensorFlow's masked form of a CRC32C, as stored in its files."""
    return ((((crc >> 15) | (crc << 17)) & _U32) + _MASK_DELTA) & _U32


def unmask(masked: int) -> int:
    """The CRC32C that ``mask`` turned into ``masked``."""
    rot = (masked - _MASK_DELTA) & _U32
    return ((rot >> 17) | (rot << 15)) & _U32


def masked_crc32c(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    return mask(crc32c(data))


def encode_record(data: bytes) -> bytes:
    """One TFRecord: length, its checksum, the data, the data's checksum."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", masked_crc32c(length)) + data +
            struct.pack("<I", masked_crc32c(data)))


def read_records(f: IO[bytes], name: str = "record file") -> Iterator[bytes]:
    """The records of TFRecord file ``f``, each checksum verified (DataLossError if not)."""
    while header := f.read(12):
        if len(header) < 12:
            raise _truncated(name)
        length, length_crc = struct.unpack("<QI", header)
        if masked_crc32c(header[:8]) != length_crc:
            raise DataLossError(f"corrupted record at {f.tell() - 12} in {name}: the "
                                "length's checksum does not match", hint=_damaged())
        data, trailer = f.read(length), f.read(4)
        if len(data) < length or len(trailer) < 4:
            raise _truncated(name)
        if masked_crc32c(data) != struct.unpack("<I", trailer)[0]:
            raise DataLossError(f"corrupted record in {name}: the data's checksum does not "
                                "match", hint=_damaged())
        yield data


def _damaged() -> str:
    return tr("the file was damaged or is still being written; write it again.")


def _truncated(name: str) -> DataLossError:
    return DataLossError(f"truncated record at the end of {name}",
                         hint=tr("a writer may still be writing it (flush or close it first)."))
