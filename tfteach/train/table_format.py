"""The sorted string table behind a TF checkpoint's ``.index`` file (LevelDB's table format).

A table maps byte-string keys, written in sorted order, to byte-string values::

    data block 0 .. data block N-1     the entries, sorted by key
    metaindex block                    empty (no filters)
    index block                        per data block: a key >= its last key -> its handle
    footer (48 bytes)                  metaindex handle, index handle, zero padding to
                                       40 bytes, magic number 0xdb4775248b80fb57 (uint64)

A *handle* is (offset, size) as two varint64s. A *block* is its entries, then the offsets
of its restart points (uint32 each) and their count (uint32). An entry is stored as
``varint32 shared, varint32 non_shared, varint32 value_length, key[shared:], value``:
``shared`` bytes of the previous key are reused (0 at a restart point, every 16 entries).
Each block is followed by a 5-byte trailer: the compression type (0: none; TF writes its
checkpoint indexes uncompressed) and the masked CRC32C of the block and that type byte.
Integers are little-endian; varints are LEB128.
"""
from __future__ import annotations

import struct
from typing import Iterable, Iterator

from tfteach.framework.record_io import masked_crc32c

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
BLOCK_SIZE = 256 * 1024     # TF's table option: start a new data block past this size
RESTART_INTERVAL = 16
_NO_COMPRESSION = b"\0"


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the varint at ``data[pos]``."""
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("a varint runs past the end of its block")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos


class _BlockBuilder:
    """Collects a block's entries: prefix-compressed, a restart point every 16."""

    def __init__(self) -> None:
        self.data, self.restarts, self.count, self.last = bytearray(), [0], 0, b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count % RESTART_INTERVAL == 0:
            if self.count:
                self.restarts.append(len(self.data))
        else:
            limit = min(len(key), len(self.last))
            while shared < limit and key[shared] == self.last[shared]:
                shared += 1
        self.data += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        self.data += key[shared:] + value
        self.count, self.last = self.count + 1, key

    def size_estimate(self) -> int:
        return len(self.data) + 4 * len(self.restarts) + 4

    def finish(self) -> bytes:
        """The block's bytes (without trailer): entries, restart offsets, their count."""
        return bytes(self.data) + struct.pack(f"<{len(self.restarts)}I", *self.restarts) + \
            struct.pack("<I", len(self.restarts))


def _separator(start: bytes, limit: bytes) -> bytes:
    """A short key k with start <= k < limit (LevelDB's FindShortestSeparator)."""
    n = 0
    while n < min(len(start), len(limit)) and start[n] == limit[n]:
        n += 1
    if n < min(len(start), len(limit)) and start[n] < 0xFF and start[n] + 1 < limit[n]:
        return start[:n] + bytes([start[n] + 1])
    return start


def _successor(key: bytes) -> bytes:
    """A short key >= ``key`` (LevelDB's FindShortSuccessor)."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


def _handle(offset: int, size: int) -> bytes:
    return _varint(offset) + _varint(size)


def build_table(items: Iterable[tuple[bytes, bytes]]) -> bytes:
    """The bytes of a table of ``items`` (key, value), which must come sorted by key.

    Block boundaries and index keys are LevelDB's, so the bytes equal TF's for the same
    entries."""
    out, index, block, pending = bytearray(), _BlockBuilder(), _BlockBuilder(), None
    for key, value in items:
        if block.count and key <= block.last or pending and key <= pending[0]:
            raise ValueError(f"table keys must be added in sorted order: {key!r}")
        if pending:  # the previous block's index entry, now that its successor is known
            index.add(_separator(pending[0], key), pending[1])
            pending = None
        block.add(key, value)
        if block.size_estimate() >= BLOCK_SIZE:
            pending = (block.last, _handle(*_append_block(out, block.finish())))
            block = _BlockBuilder()
    if block.count:
        pending = (block.last, _handle(*_append_block(out, block.finish())))
    if pending:
        index.add(_successor(pending[0]), pending[1])
    metaindex = _append_block(out, _BlockBuilder().finish())
    index_handle = _append_block(out, index.finish())
    footer = _handle(*metaindex) + _handle(*index_handle)
    return bytes(out) + footer.ljust(FOOTER_SIZE - 8, b"\0") + struct.pack("<Q", MAGIC)


def _append_block(out: bytearray, block: bytes) -> tuple[int, int]:
    """Append a block and its trailer to ``out``; returns its handle (offset, size)."""
    offset = len(out)
    out += block + _NO_COMPRESSION + struct.pack("<I", masked_crc32c(block + _NO_COMPRESSION))
    return offset, len(block)


def read_table(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The (key, value) entries of a table's bytes, in order; ValueError if malformed."""
    if len(data) < FOOTER_SIZE or struct.unpack("<Q", data[-8:])[0] != MAGIC:
        raise ValueError("not a table: no table magic number at its end")
    footer = data[-FOOTER_SIZE:]
    _, pos = _read_varint(footer, _read_varint(footer, 0)[1])   # skip the metaindex handle
    index_offset, pos = _read_varint(footer, pos)
    index_size, _ = _read_varint(footer, pos)
    for _, handle in _entries(_read_block(data, index_offset, index_size)):
        offset, pos = _read_varint(handle, 0)
        size, _ = _read_varint(handle, pos)
        yield from _entries(_read_block(data, offset, size))


def _read_block(data: bytes, offset: int, size: int) -> bytes:
    """A block's bytes after checking its trailer's checksum."""
    end = offset + size
    if end + 5 > len(data) - FOOTER_SIZE:
        raise ValueError(f"a block at {offset} of {size} bytes runs past the table's end")
    compression, (crc,) = data[end:end + 1], struct.unpack("<I", data[end + 1:end + 5])
    if compression != _NO_COMPRESSION:
        raise ValueError(f"block compression type {compression[0]} is not supported (only "
                         "uncompressed tables, which TF writes for checkpoints)")
    if masked_crc32c(data[offset:end + 1]) != crc:
        raise ValueError(f"block checksum mismatch at offset {offset}")
    return data[offset:end]


def _entries(block: bytes) -> Iterator[tuple[bytes, bytes]]:
    if len(block) < 4:
        raise ValueError("a block is shorter than its restart count")
    (num_restarts,) = struct.unpack("<I", block[-4:])
    end = len(block) - 4 - 4 * num_restarts
    if end < 0:
        raise ValueError("a block's restart array runs past its start")
    pos, key = 0, b""
    while pos < end:
        shared, pos = _read_varint(block, pos)
        non_shared, pos = _read_varint(block, pos)
        value_length, pos = _read_varint(block, pos)
        if shared > len(key) or pos + non_shared + value_length > end:
            raise ValueError("a block entry runs past its block")
        key = key[:shared] + block[pos:pos + non_shared]
        pos += non_shared
        yield key, block[pos:pos + value_length]
        pos += value_length
