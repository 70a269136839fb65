"""Tensor wire format: a small ``TensorHeader`` plus the tensor's raw bytes.

- Numeric and bool tensors: ``dtype`` is numpy's dtype string (``"<f4"``), content is the
  C-order bytes. String tensors: ``dtype="string"``, content is the element lengths (int64)
  followed by the concatenated bytes; they decode to an object array of ``bytes`` as in TF.
- Unary answers (RecvTensorInline): a ``TensorProto`` with the content inline (at most
  ``INLINE_BYTES``) or, for a receiver on this host, a header naming a shared-memory
  segment (see ``shm``) for tensors of ``shm.THRESHOLD_BYTES`` or more; ``fill_reply``
  declines any other tensor, which then streams.
- Between processes on one host, RunStep and RunGraph requests and answers put tensors of
  ``shm.SEGMENT_MIN_BYTES`` or more in one of the caller's reused segments (``add_named``
  with a segment, ``fill_into``): the header names the segment and gives the tensor's
  ``shm_offset``; the receiver copies it out (``from_named`` with a ``sender``, which
  may name only its own segments; ``from_reply``). A tensor that does not fit there (over
  ``shm.MAX_REUSED_BYTES``, or the segment is full) goes, if it is ``shm.THRESHOLD_BYTES``
  or more, through a segment of its own (header ``shm_own``) that the sender writes and
  the receiver takes (``shm.take``: copied out and freed as it is copied), so a tensor of
  any size crosses without touching the gRPC message cap.
- Streams (RecvTensor): the first message holds only the header, later ones only chunks of
  at most ``CHUNK_BYTES``; the receiver copies each chunk once, into one preallocated
  buffer. A header may instead name a shared-memory segment holding the bytes; if
  /dev/shm is missing or full the tensor is streamed.
Invariants: headers from the network are validated before any allocation or view (dtype
kind, non-negative shape, nbytes = product(shape) * itemsize <= MAX_TENSOR_BYTES), so a bad
peer gets a DataLossError, never a crash; running out of memory is ResourceExhaustedError.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from tfteach import errors
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.transport import shm, shm_callers
from tfteach.i18n import hint_line, tr

CHUNK_BYTES = 4 << 20
INLINE_BYTES = 1 << 20
MAX_TENSOR_BYTES = 1 << 36
STRING = "string"
_KINDS = frozenset("biufc")       # bool, int, uint, float, complex


def encode(value: object) -> tuple[pb.TensorHeader, memoryview]:
    """The header and a flat byte view of ``value`` (an array, scalar or nested list)."""
    array = np.asarray(value)
    if array.dtype.kind in "OSU":
        content = _encode_strings(array)
        header = pb.TensorHeader(dtype=STRING, shape=array.shape, nbytes=len(content))
        return header, memoryview(content)
    if array.dtype.kind not in _KINDS:
        raise errors.InvalidArgumentError(
            f"Cannot send a tensor of dtype {array.dtype} between tasks",
            hint=tr("Only numeric, bool and string tensors can cross between tasks."))
    flat = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    header = pb.TensorHeader(dtype=array.dtype.str, shape=array.shape, nbytes=flat.nbytes)
    return header, memoryview(flat)


def decode(header: pb.TensorHeader, content: np.ndarray) -> np.ndarray:
    """The tensor described by a validated ``header`` over ``content`` (uint8, no copy)."""
    shape = tuple(header.shape)
    if header.dtype == STRING:
        return _decode_strings(content, shape)
    return content.view(np.dtype(header.dtype)).reshape(shape)


def check_header(header: pb.TensorHeader) -> None:
    """Raise DataLossError unless ``header`` describes a tensor we can rebuild."""
    shape = tuple(header.shape)
    if any(dim < 0 for dim in shape) or not 0 <= header.nbytes <= MAX_TENSOR_BYTES:
        raise errors.DataLossError(f"Received a tensor header with an impossible size: "
                                   f"shape {shape}, {header.nbytes} bytes")
    if header.dtype == STRING:
        if header.nbytes < 8 * math.prod(shape):
            raise errors.DataLossError("Received a string tensor shorter than its lengths")
        return
    try:
        dtype = np.dtype(header.dtype)
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in _KINDS:
        raise errors.DataLossError(f"Received a tensor of unknown dtype {header.dtype!r}")
    if math.prod(shape) * dtype.itemsize != header.nbytes:
        raise errors.DataLossError(
            f"Received a tensor header whose size {header.nbytes} does not match its "
            f"shape {shape} and dtype {dtype}")


def to_proto(value: object) -> pb.TensorProto:
    """A ``TensorProto`` holding ``value``'s bytes inline (for unary messages)."""
    proto = pb.TensorProto()
    _set_tensor(proto, *encode(value))
    return proto


def _set_tensor(proto: pb.TensorProto, header: pb.TensorHeader, content: memoryview | None) -> None:
    """Set ``proto`` in place (never pass a built TensorProto to a message's constructor:
    that copies the content once more)."""
    proto.header.CopyFrom(header)
    if content is not None:
        proto.content = content.tobytes()


def from_proto(proto: pb.TensorProto) -> np.ndarray:
    """The tensor held inline in a ``TensorProto``."""
    check_header(proto.header)
    if proto.header.shm_name:
        raise errors.DataLossError(
            f"Received a tensor in shared-memory segment {proto.header.shm_name!r} from a "
            "process on another host",
            hint=tr("Only a sender on this host may use shared memory."))
    if len(proto.content) != proto.header.nbytes:
        raise errors.DataLossError(
            f"Received a tensor of {len(proto.content)} bytes; its header says "
            f"{proto.header.nbytes}")
    return decode(proto.header, np.frombuffer(proto.content, dtype=np.uint8))


def add_named(field: Any, tensors: Mapping[str, object], segment: memoryview | None = None,
              segment_name: str = "", shm_ok: bool = False) -> list[str]:
    """Append ``{name: value}`` to a repeated NamedTensor ``field``. Large tensors go into
    ``segment`` (a reused segment called ``segment_name``, for a receiver on this host)
    while they fit; the others inline or, with ``shm_ok`` (a receiver on this host), the
    very large ones in a segment of their own (``fill_reply``). Returns the names of those
    segments of their own, which a sender releases once the call ended."""
    offset, own = 0, []
    for name, value in tensors.items():
        proto = field.add(name=name).tensor
        end = None if segment is None else fill_into(proto, value, segment, segment_name,
                                                     offset)
        if end is not None:
            offset = end
        elif shm_ok:
            fill_reply(proto, value, shm_ok=True, inline_bytes=MAX_TENSOR_BYTES)
            if proto.header.shm_own:
                own.append(proto.header.shm_name)
        else:
            _set_tensor(proto, *encode(value))
    return own


def segment_bytes(tensors: Mapping[str, object]) -> int:
    """The reused segment size for the large tensors of ``tensors`` (0: none; the ones
    that do not fit go through segments of their own)."""
    return _reusable_bytes(np.asarray(value).nbytes for value in tensors.values())


def _reusable_bytes(sizes: Iterable[int]) -> int:
    """Room in a reused segment for the tensors of ``sizes`` that may go there, at most
    ``shm.MAX_REUSED_BYTES``."""
    total = sum(aligned(n) for n in sizes
                if shm.SEGMENT_MIN_BYTES <= n <= shm.MAX_REUSED_BYTES)
    return min(total, shm.MAX_REUSED_BYTES)


def from_named(named: Iterable[pb.NamedTensor],
               sender: shm_callers.Caller | None = None) -> dict[str, np.ndarray]:
    """NamedTensor messages -> ``{name: array}``. With a ``sender`` (a caller on this host)
    a tensor in one of the sender's reused segments is copied out of it."""
    return {item.name: from_segment(item.tensor, sender)
            if sender is not None and item.tensor.header.shm_name
            else from_proto(item.tensor) for item in named}


def from_segment(proto: pb.TensorProto, sender: shm_callers.Caller) -> np.ndarray:
    """A tensor ``sender`` wrote into its reused segment or a segment of its own
    (``add_named``), copied out; a segment that is not the sender's is
    PermissionDeniedError."""
    header = proto.header
    check_header(header)
    owner = sender.owner_of(header.shm_name)
    if header.shm_own:
        buffer = allocate(header.nbytes)
        shm.take(header.shm_name, header.nbytes, memoryview(buffer))
        return decode(header, buffer)
    start, end = header.shm_offset, header.shm_offset + header.nbytes
    view = shm.mapped(header.shm_name, end, owner) if start >= 0 else None
    if view is None:
        raise errors.DataLossError(
            f"Received a tensor at bytes {start}..{end} of shared-memory segment "
            f"{header.shm_name!r}, which no segment on this host holds",
            hint=tr("The sending process probably stopped during the call; run it again."))
    buffer = allocate(header.nbytes)
    buffer[:] = np.frombuffer(view[start:end], dtype=np.uint8)
    return decode(header, buffer)


def fill_reply(proto: pb.TensorProto, value: object, is_dead: bool = False,
               shm_ok: bool = False, inline_bytes: int = INLINE_BYTES) -> bool:
    """Set ``proto`` to the whole of ``value`` for a unary answer: a shared-memory
    segment's name (if ``shm_ok`` and the tensor is large), else the content inline.
    Return False (``proto`` untouched) if the content is over ``inline_bytes`` and must
    stream instead."""
    header, content = _header_and_content(value, is_dead, shm_ok)
    if header.shm_name:
        _set_tensor(proto, header, None)
    elif header.nbytes > inline_bytes:
        return False
    else:
        _set_tensor(proto, header, content)
    return True


def fill_into(proto: pb.TensorProto, value: object, segment: memoryview, name: str,
              offset: int) -> int | None:
    """Write a large tensor into the caller's reused ``segment`` (called ``name``) at
    ``offset`` and set ``proto`` to point there; return the next free offset, or None
    (``proto`` untouched) if the tensor is small or does not fit."""
    header, content = encode(value)
    end = offset + header.nbytes
    if header.nbytes < shm.SEGMENT_MIN_BYTES or end > len(segment):
        return None
    segment[offset:end] = content
    header.shm_name, header.shm_offset = name, offset
    _set_tensor(proto, header, None)
    return aligned(end)


def aligned(nbytes: int) -> int:
    """``nbytes`` rounded up to 64: tensors in a reused segment start 64-byte aligned."""
    return -(-nbytes // 64) * 64


def reply_bytes(sent: Iterable[pb.NamedTensor]) -> int:
    """The reused segment size for the shared-memory tensors of an answer (those that
    may go in one)."""
    return _reusable_bytes(item.tensor.header.nbytes for item in sent
                           if item.tensor.header.shm_name)


def from_reply(proto: pb.TensorProto, reply: "shm.ReusedSegment | None" = None,
               lend: bool = False) -> tuple[np.ndarray, bool]:
    """``(tensor, is_dead)`` from a ``fill_reply`` or ``fill_into`` answer (the array is
    writable; one written into ``reply`` is copied out of it, or with ``lend`` is a view
    of it that keeps ``reply`` out of the pool while it lives: ``shm.lend``)."""
    header = proto.header
    check_header(header)
    if not header.shm_name:
        return from_proto(proto).copy(), header.is_dead
    if reply is not None and header.shm_name == reply.name:
        start, end = header.shm_offset, header.shm_offset + header.nbytes
        if not 0 <= start <= end <= reply.size:
            raise errors.DataLossError(f"Received a tensor outside reply segment {reply.name}")
        view = np.frombuffer(reply.view[start:end], dtype=np.uint8)
        if lend:
            shm.lend(reply, view.base)
            return decode(header, view), header.is_dead
        buffer = allocate(header.nbytes)
        buffer[:] = view
    else:
        buffer = allocate(header.nbytes)
        shm.take(header.shm_name, header.nbytes, memoryview(buffer))
    return decode(header, buffer), header.is_dead


def from_answer(named: Iterable[pb.NamedTensor],
                reply: "shm.ReusedSegment | None" = None) -> dict[str, np.ndarray]:
    """An answer's NamedTensor messages -> ``{name: array}``: inline tensors as read-only
    views of the message, shared-memory ones copied out (``from_reply``)."""
    return {item.name: from_reply(item.tensor, reply)[0] if item.tensor.header.shm_name
            else from_proto(item.tensor) for item in named}


def stream(value: object, is_dead: bool = False, shm_ok: bool = False,
           chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Serialized RecvTensorResponse messages for ``value``: the header alone (naming a
    shared-memory segment if ``shm_ok`` and the tensor is large), then the content chunks.

    Chunk messages are built by hand (field tag, length, bytes) in one copy from the tensor;
    they are ordinary protobuf, so any client can parse them."""
    header, content = _header_and_content(value, is_dead, shm_ok)
    yield pb.RecvTensorResponse(header=header).SerializeToString()
    if header.shm_name:
        return
    for start in range(0, header.nbytes, chunk_bytes):
        piece = content[start:start + chunk_bytes]
        yield b"".join((_CHUNK_TAG, _varint(len(piece)), piece))


def assemble(messages: Iterator[bytes]) -> tuple[np.ndarray, bool]:
    """Rebuild ``(tensor, is_dead)`` from serialized RecvTensor responses, copying every
    chunk once, straight into one preallocated buffer."""
    first = next(messages, None)
    first = pb.RecvTensorResponse.FromString(first) if first is not None else None
    if first is None or not first.HasField("header"):
        raise errors.DataLossError("RecvTensor stream ended before the tensor header")
    header = first.header
    check_header(header)
    buffer = allocate(header.nbytes)
    if header.shm_name:
        shm.take(header.shm_name, header.nbytes, memoryview(buffer))
        filled = header.nbytes
    else:
        filled = _fill(buffer, 0, first.chunk)
    for message in messages:
        filled = _fill(buffer, filled, _chunk_of(message))
    if filled != header.nbytes:
        raise errors.DataLossError(
            f"RecvTensor stream ended after {filled} of {header.nbytes} bytes")
    return decode(header, buffer), header.is_dead


def _header_and_content(value: object, is_dead: bool,
                        shm_ok: bool) -> tuple[pb.TensorHeader, memoryview]:
    """``encode`` with ``is_dead``, and the content exported to shared memory (header's
    ``shm_name`` set) when ``shm_ok`` and it is large enough."""
    header, content = encode(value)
    header.is_dead = is_dead
    if shm_ok and header.nbytes >= shm.THRESHOLD_BYTES:
        header.shm_name = _export_or_empty(content)
        header.shm_own = bool(header.shm_name)
    return header, content


_CHUNK_TAG = bytes([(2 << 3) | 2])      # field 2 (chunk), wire type 2 (length-delimited)
_shm_full_warned = False


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)


def _chunk_of(message: bytes) -> memoryview:
    """The chunk of a serialized chunk-only message, without copying; any other message
    is parsed as protobuf."""
    if message[:1] == _CHUNK_TAG:
        length, shift, pos = 0, 0, 1
        while pos < len(message) and pos < 11:
            byte = message[pos]
            length |= (byte & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if not byte & 0x80:
                if pos + length == len(message):
                    return memoryview(message)[pos:]
                break
    try:
        return memoryview(pb.RecvTensorResponse.FromString(message).chunk)
    except Exception:  # noqa: BLE001 - protobuf raises DecodeError, or others on garbage
        raise errors.DataLossError("Received a malformed RecvTensor chunk") from None


def _export_or_empty(content: memoryview) -> str:
    """Put ``content`` in a shared-memory segment; "" (stream instead) if that fails."""
    global _shm_full_warned
    if not shm.available():
        return ""
    try:
        return shm.export(content)
    except OSError as exc:
        if not _shm_full_warned:
            _shm_full_warned = True
            from tfteach.distributed.protocol import tflog
            tflog.warning(tr("Shared memory is not usable ({error}); sending large tensors "
                             "over gRPC instead.", error=exc) + " " + hint_line(tr(
                "a Docker container's /dev/shm is 64 MB unless started with --shm-size.")))
        return ""


def allocate(nbytes: int) -> np.ndarray:
    """An uninitialised byte buffer for a received tensor (ResourceExhaustedError if
    memory is short)."""
    try:
        return np.empty(nbytes, dtype=np.uint8)
    except MemoryError:
        raise errors.ResourceExhaustedError(
            f"Out of memory receiving a tensor of {nbytes} bytes",
            hint=tr("Send smaller tensors, or give this process more memory.")) from None


def _fill(buffer: np.ndarray, offset: int, chunk: bytes | memoryview) -> int:
    end = offset + len(chunk)
    if end > buffer.nbytes:
        raise errors.DataLossError(
            f"RecvTensor stream sent more than the {buffer.nbytes} bytes its header announced")
    buffer[offset:end] = np.frombuffer(chunk, dtype=np.uint8)
    return end


def _encode_strings(array: np.ndarray) -> bytes:
    items = [_as_bytes(item) for item in array.reshape(-1).tolist()]
    lengths = np.array([len(item) for item in items], dtype="<i8")
    return lengths.tobytes() + b"".join(items)


def _as_bytes(item: object) -> bytes:
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytes, bytearray)):
        return bytes(item)
    raise errors.InvalidArgumentError(
        f"Cannot send an object array holding {type(item).__name__} between tasks",
        hint=tr("Object arrays may only hold str or bytes (string tensors)."))


def _decode_strings(content: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    count = math.prod(shape)
    lengths = content[:8 * count].view("<i8")
    if (lengths < 0).any() or 8 * count + int(lengths.sum()) != content.nbytes:
        raise errors.DataLossError("Received a string tensor whose lengths do not add up")
    data = content[8 * count:].tobytes()
    ends = np.cumsum(lengths).tolist()
    starts = [0] + ends[:-1] if ends else []
    result = np.empty(count, dtype=object)
    result[:] = [data[start:end] for start, end in zip(starts, ends, strict=True)]
    return result.reshape(shape)
