"""Reading tfteach's first checkpoint format (NumPy arrays plus a JSON index).

Checkpoints are now written in TF's V2 format (``tfteach.train.tensor_bundle``); this module
lets ``Saver.restore`` and ``tf.train.load_variable`` still read the older ones. Such a
checkpoint with prefix ``P`` is two files:

``P.data.npz`` (or ``P.data.1.npz``: a re-save of the same prefix alternated the two names)
    A standard uncompressed NumPy ``.npz`` archive: the zip member ``NAME.npy`` holds the
    variable ``NAME`` (names may contain ``/``) as a little-endian ``.npy`` array.
``P.index.json``
    ``{"format": "tfteach-checkpoint", "version": 1, "data_file": "<basename>.data.npz",
    "tensors": [{"name": "w", "dtype": "float32", "shape": [2, 3], "crc32": 123}, ...]}``,
    where ``crc32`` is ``zlib.crc32`` of the array's bytes in C order and ``data_file``
    names the data file (only its suffix counts). Nothing is pickled.

Problems in the files are ``ValueError`` (or ``zipfile.BadZipFile``, ``OSError``).
"""
from __future__ import annotations

import json
import zipfile
import zlib
from typing import Mapping

import numpy as np

from tfteach.train.tensor_bundle import TensorEntry

FORMAT = "tfteach-checkpoint"
VERSION = 1
INDEX_SUFFIX = ".index.json"
DATA_SUFFIXES = (".data.npz", ".data.1.npz")


def crc32(array: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def parse_index(raw: bytes) -> tuple[dict[str, TensorEntry], str]:
    """The entries and the data file suffix of an index file's bytes."""
    try:
        index = json.loads(raw)
        if index.get("format") != FORMAT or index.get("version") != VERSION:
            raise ValueError(f"unknown format {index.get('format')!r} version "
                             f"{index.get('version')!r} (expected {FORMAT!r} {VERSION})")
        entries = [TensorEntry(str(t["name"]), str(t["dtype"]),
                               tuple(int(d) for d in t["shape"]), int(t["crc32"]))
                   for t in index["tensors"]]
        suffix = _suffix_of(index.get("data_file", DATA_SUFFIXES[0]))
    except (KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"malformed index: {err!r}") from None
    return {entry.name: entry for entry in entries}, suffix


def _suffix_of(data_file: object) -> str:
    for suffix in DATA_SUFFIXES:
        if isinstance(data_file, str) and data_file.endswith(suffix):
            return suffix
    raise ValueError(f"data_file {data_file!r} ends in none of {list(DATA_SUFFIXES)}")


def read_tensors(path: str, entries: Mapping[str, TensorEntry]) -> dict[str, np.ndarray]:
    """All tensors of data file ``path`` that ``entries`` describe, checksums verified."""
    with zipfile.ZipFile(path) as archive:
        members, expected = set(archive.namelist()), {name + ".npy" for name in entries}
        if members != expected:
            raise ValueError(f"it holds {sorted(members)}, the index lists {sorted(expected)}")
        return {name: _read_tensor(archive, e) for name, e in entries.items()}


def _read_tensor(archive: zipfile.ZipFile, entry: TensorEntry) -> np.ndarray:
    with archive.open(entry.name + ".npy") as member:
        array = np.lib.format.read_array(member, allow_pickle=False)
    if array.dtype.name != entry.dtype or array.shape != entry.shape:
        raise ValueError(f"tensor '{entry.name}' is {array.dtype.name} {list(array.shape)}"
                         f" but the index says {entry.dtype} {list(entry.shape)}")
    if crc32(array) != entry.checksum:
        raise ValueError(f"the checksum of tensor '{entry.name}' does not match")
    return array
