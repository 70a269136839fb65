"""TensorFlow's V2 checkpoint format (a *tensor bundle*), read and written without TF.

A checkpoint with prefix ``P`` is::

    P.index                         a table (``tfteach.train.table_format``): key -> value
        ""      -> BundleHeaderProto {num_shards, endianness: LITTLE, version {producer: 1}}
        "name"  -> BundleEntryProto {dtype, shape, shard_id, offset, size, crc32c}
                   one per tensor, keys in byte order ("" sorts first)
    P.data-00000-of-00001           the tensors' raw bytes, one after another: C order,
                                    little-endian, no padding; shard ``s`` of ``n`` is
                                    ``P.data-<s:05d>-of-<n:05d>``

``offset`` and ``size`` locate a tensor in its shard's data file; ``crc32c`` is the masked
CRC32C (``tfteach.framework.record_io``) of those bytes. The messages are TF's own
(``tfteach.framework.protos``), so TF reads these files with ``tf.train.Saver.restore``
and ``tf.train.load_checkpoint``, and tfteach reads the ones TF writes. Only bool and
numeric tensors are supported (no strings). A partitioned variable is saved in slices
(``tfteach.train.checkpoint_slices``): its entry has ``slices`` and no data, and each slice
is an ordinary entry whose key is bytes (TF's encoded slice key), not a name.

This module only encodes and decodes; ``tfteach.train.checkpoint_format`` writes the files
(atomically) and names them. Problems in the bytes are ``ValueError``.
"""
from __future__ import annotations

import re
from typing import IO, Mapping, NamedTuple

import numpy as np

from tfteach.framework import tensor_proto
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb
from tfteach.framework.record_io import masked_crc32c
from tfteach.train.table_format import build_table, read_table

INDEX_SUFFIX = ".index"
HEADER_KEY = b""
PRODUCER = 1               # the bundle format version TF writes (kTensorBundleVersion)
_DATA_NAME = re.compile(r"\.data-(\d{5})-of-(\d{5})$")


class TensorEntry(NamedTuple):
    """One saved tensor as the index describes it (``checksum``: as stored in its format)."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    checksum: int
    shard_id: int = 0
    offset: int = 0
    size: int = 0
    slices: tuple = ()        # a sliced tensor's ((start, length) per axis) per slice


def _key(name: str | bytes) -> bytes:
    """The index key of an entry: its name, or a slice's encoded key as it is."""
    return name if isinstance(name, bytes) else name.encode()


def data_filename(prefix: str, shard: int = 0, num_shards: int = 1) -> str:
    """``P.data-00000-of-00001``: the file of data shard ``shard`` of ``num_shards``."""
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def is_data_filename(prefix: str, path: str) -> bool:
    """Whether ``path`` is a data shard file of checkpoint ``prefix``."""
    return path.startswith(prefix) and _DATA_NAME.fullmatch(path[len(prefix):]) is not None


def layout(arrays: Mapping[str, np.ndarray]) -> dict[str, TensorEntry]:
    """Entries for ``arrays`` (C-ordered, little-endian) stored one after another in shard 0."""
    entries, offset = {}, 0
    for name, array in arrays.items():
        entries[name] = TensorEntry(name, array.dtype.name, tuple(array.shape),
                                    masked_crc32c(_raw(array)), 0, offset, array.nbytes)
        offset += array.nbytes
    return entries


def write_data(f: IO[bytes], arrays: Mapping[str, np.ndarray]) -> None:
    """Write the data file of ``layout(arrays)``: every tensor's bytes, in that order."""
    for array in arrays.values():
        f.write(_raw(array))


def _raw(array: np.ndarray) -> np.ndarray:
    """The bytes of a C-ordered array, as a uint8 view (no copy)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def index_bytes(entries: Mapping[str, TensorEntry], num_shards: int = 1) -> bytes:
    """The ``.index`` file of a bundle with these entries and ``num_shards`` data files."""
    header = pb.BundleHeaderProto(num_shards=num_shards, endianness=pb.BundleHeaderProto.LITTLE,
                                  version=pb.VersionDef(producer=PRODUCER))
    items = [(HEADER_KEY, header.SerializeToString())]
    for name in sorted(entries, key=_key):
        items.append((_key(name), _entry_proto(entries[name]).SerializeToString()))
    return build_table(items)


def _entry_proto(e: TensorEntry) -> pb.BundleEntryProto:
    """An entry's proto; a sliced tensor's has its slices and no place in the data."""
    proto = pb.BundleEntryProto(dtype=tensor_proto.datatype_of(e.dtype))
    if not e.slices:
        proto.shard_id, proto.offset, proto.size, proto.crc32c = \
            e.shard_id, e.offset, e.size, e.checksum
    proto.shape.SetInParent()        # present even for a scalar, as TF writes it
    tensor_proto.shape_proto(e.shape, proto.shape)
    for extents in e.slices:
        slice_proto = proto.slices.add()
        for start, length in extents:
            extent = slice_proto.extent.add()
            if length >= 0:          # no length: the whole axis
                extent.start, extent.length = start, length
    return proto


def parse_index(raw: bytes) -> tuple[pb.BundleHeaderProto, dict[str, TensorEntry]]:
    """The header and the entries (name -> TensorEntry) of an ``.index`` file's bytes."""
    items = iter(read_table(raw))
    key, value = next(items, (None, None))
    if key != HEADER_KEY:
        raise ValueError("the index has no header entry (its first key is not '')")
    header = pb.BundleHeaderProto.FromString(value)
    if header.num_shards < 1:
        raise ValueError(f"the header says num_shards={header.num_shards}")
    return header, dict(_entry(k, v, header) for k, v in items)


def _entry(key: bytes, value: bytes,
           header: pb.BundleHeaderProto) -> tuple[str | bytes, TensorEntry]:
    name = key if key.startswith(b"\x00") else key.decode(errors="replace")
    proto = pb.BundleEntryProto.FromString(value)
    dtype = tensor_proto.numpy_dtype(proto.dtype)
    if dtype == object:
        raise ValueError(f"tensor '{name}' holds strings; tfteach checkpoints hold bool and "
                         "numeric tensors only")
    shape = tuple(d.size for d in proto.shape.dim)
    if any(d < 0 for d in shape) or proto.shard_id >= header.num_shards:
        raise ValueError(f"tensor '{name}' has shape {list(shape)} in shard {proto.shard_id}"
                         f" of {header.num_shards}")
    if header.endianness == pb.BundleHeaderProto.BIG:
        dtype = dtype.newbyteorder(">")
    if proto.slices:
        return name, TensorEntry(name, dtype.name, shape, 0, slices=tuple(
            tuple((e.start, e.length if e.HasField("length") else -1) for e in s.extent)
            for s in proto.slices))
    if proto.size != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
        raise ValueError(f"tensor '{name}' has {proto.size} bytes, not those of "
                         f"{dtype.name}{list(shape)}")
    return name, TensorEntry(name, dtype.str if dtype.byteorder == ">" else dtype.name, shape,
                             proto.crc32c, proto.shard_id, proto.offset, proto.size)


def read_tensor(f: IO[bytes], entry: TensorEntry) -> np.ndarray:
    """The tensor ``entry`` describes, from its shard's open data file (checksum verified)."""
    f.seek(entry.offset)
    data = f.read(entry.size)
    if len(data) != entry.size:
        raise ValueError(f"tensor '{entry.name}' runs past the end of the data file")
    if masked_crc32c(data) != entry.checksum:
        raise ValueError(f"the checksum of tensor '{entry.name}' does not match")
    dtype = np.dtype(entry.dtype)
    array = np.frombuffer(data, dtype).reshape(entry.shape)
    return array.astype(dtype.newbyteorder("="))   # a writable copy in native order
