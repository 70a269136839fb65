"""The on-disk checkpoint format behind ``tf.train.Saver``: NumPy arrays plus a JSON index.

A checkpoint is named by its *prefix* ``P`` (e.g. ``/train/model.ckpt-100``, what
``Saver.save`` returns) and lives in two files:

``P.data.npz`` (or ``P.data.1.npz``, see below)
    A standard uncompressed NumPy ``.npz`` archive: the zip member ``NAME.npy`` holds the
    variable ``NAME`` (names may contain ``/``) as a little-endian ``.npy`` array. Nothing
    is pickled; ``np.load(P + ".data.npz", allow_pickle=False)["NAME"]`` reads one by hand.
``P.index.json``
    ``{"format": "tfteach-checkpoint", "version": 1, "data_file": "<basename>.data.npz",
    "tensors": [{"name": "w", "dtype": "float32", "shape": [2, 3], "crc32": 123}, ...]}``
    with tensors sorted by name; ``crc32`` is ``zlib.crc32`` of the array's bytes in C
    order as stored. Only bool and numeric (int, uint, float, complex) arrays are saved.
    ``data_file`` names the data file; it ends in ``.data.npz`` or ``.data.1.npz``.

The directory's state file ``checkpoint`` is TF's text format. It names the newest
checkpoint, then all kept ones (oldest first, newest last), relative to the directory
when they lie inside it and absolute otherwise::

    model_checkpoint_path: "model.ckpt-100"
    all_model_checkpoint_paths: "model.ckpt-50"
    all_model_checkpoint_paths: "model.ckpt-100"

Invariants (crash safety): every file is first written to ``<file>.tmp<random>`` in the
same directory, fsynced, then renamed over its final name with ``os.replace``, so readers
see a whole file or none. The data file is renamed into place before the index, and only
the index names it, so a prefix whose index exists has its complete data (the checksums
prove it). Saving over an existing prefix writes its data under the *other* data file
name (``.data.npz`` and ``.data.1.npz`` take turns), then replaces the index: the old
checkpoint stays whole until the new index replaces it in one rename, and only then is
the old data file removed. Deleting removes the index first. The state file is updated
(the same way) only after the checkpoint is complete, and callers delete old checkpoints
only after the state file no longer names them. A writer killed midway leaves at most
temporary or unreferenced files, which nothing reads and the next write or delete of
that prefix removes.

Reading (``latest_checkpoint``): when the state file's newest checkpoint is incomplete
or missing, the newest complete one it lists is used instead, with a logged warning.
"""
from __future__ import annotations

import glob
import json
import logging
import os
import re
import secrets
import struct
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, NamedTuple

import numpy as np

from tfteach.errors import DataLossError, InvalidArgumentError, NotFoundError

FORMAT = "tfteach-checkpoint"
VERSION = 1
DATA_SUFFIX = ".data.npz"
ALT_DATA_SUFFIX = ".data.1.npz"
_DATA_SUFFIXES = (DATA_SUFFIX, ALT_DATA_SUFFIX)
INDEX_SUFFIX = ".index.json"
STATE_FILENAME = "checkpoint"
TEMP_MARK = ".tmp"
_SAVABLE_KINDS = "biufc"  # bool, int, uint, float, complex
_log = logging.getLogger("tfteach.train")


class TensorEntry(NamedTuple):
    """One saved tensor as the index describes it."""
    name: str
    dtype: str
    shape: tuple[int, ...]
    crc32: int


@dataclass
class CheckpointState:
    """The state file's contents, paths joined with the directory (as TF returns them)."""
    model_checkpoint_path: str
    all_model_checkpoint_paths: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- files, written atomically

def _fsync_directory(directory: str) -> None:
    """Make renames in ``directory`` durable (not supported everywhere, hence best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_write(path: str, write: Callable[[IO[bytes]], object]) -> None:
    """Write ``path`` via a synced temporary file renamed over it: all of it or nothing."""
    temp = f"{path}{TEMP_MARK}{secrets.token_hex(4)}"
    try:
        with open(temp, "xb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        _remove(temp)
        raise
    _fsync_directory(os.path.dirname(path) or ".")


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _remove_temp_files(path: str) -> None:
    """Delete temporary files a killed writer of ``path`` left behind."""
    for temp in glob.glob(glob.escape(path + TEMP_MARK) + "*"):
        _remove(temp)


# ---------------------------------------------------------------- writing a checkpoint

def _savable(name: object, value: object) -> np.ndarray:
    """``value`` as a C-ordered little-endian array, after checking name and dtype."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise InvalidArgumentError(f"Cannot save a tensor named {name!r}: names must be "
                                   "non-empty strings.", hint="Save variables by their "
                                   "op names, e.g. {'layer1/weights': value}.")
    array = np.asarray(value)
    if array.dtype.kind not in _SAVABLE_KINDS:
        raise InvalidArgumentError(f"Cannot save tensor '{name}' of dtype {array.dtype}: "
                                   "checkpoints hold bool and numeric arrays only.",
                                   hint="Leave this tensor out of the Saver's var_list.")
    return np.asarray(array.astype(array.dtype.newbyteorder("<"), copy=False), order="C")


def _crc32(array: np.ndarray) -> int:
    return zlib.crc32(np.asarray(array, order="C").reshape(-1).view(np.uint8))


def _write_npz(f: IO[bytes], arrays: Mapping[str, np.ndarray]) -> None:
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def _index(prefix: str, arrays: Mapping[str, np.ndarray], data_suffix: str) -> bytes:
    """The index file's bytes: the header fields, then one line of JSON per tensor."""
    tensors = [json.dumps({"name": name, "dtype": array.dtype.name, "shape": list(array.shape),
                           "crc32": _crc32(array)}) for name, array in arrays.items()]
    header = json.dumps({"format": FORMAT, "version": VERSION,
                         "data_file": os.path.basename(prefix) + data_suffix})
    body = ",\n  ".join(tensors)
    return f'{header[:-1]},\n "tensors": [\n  {body}\n ]}}\n'.encode()


def write_checkpoint(prefix: str | os.PathLike, tensors: Mapping[str, np.ndarray]) -> str:
    """Save ``tensors`` (name -> array) as checkpoint ``prefix``, atomically; returns prefix.

    Overwriting an existing prefix keeps the old checkpoint whole until the new index
    replaces it, so a crash leaves either the old checkpoint or the new one, never a mix
    and never neither.
    """
    prefix = os.fspath(prefix)
    arrays = {name: _savable(name, value) for name, value in tensors.items()}
    arrays = dict(sorted(arrays.items()))
    parent = os.path.dirname(prefix) or "."
    if not os.path.isdir(parent):
        raise NotFoundError(f"Parent directory of {prefix} doesn't exist, can't save.",
                            hint=f"Create it first: os.makedirs({parent!r}, exist_ok=True).")
    for path in _files_of(prefix):
        _remove_temp_files(path)
    suffix = ALT_DATA_SUFFIX if _data_suffix_in_use(prefix) == DATA_SUFFIX else DATA_SUFFIX
    _atomic_write(prefix + suffix, lambda f: _write_npz(f, arrays))
    index = _index(prefix, arrays, suffix)
    _atomic_write(prefix + INDEX_SUFFIX, lambda f: f.write(index))
    for other in _DATA_SUFFIXES:  # the replaced data, or what a killed save left
        if other != suffix:
            _remove(prefix + other)
    return prefix


def _files_of(prefix: str) -> list[str]:
    """The files checkpoint ``prefix`` may have: its index and either data file."""
    return [prefix + INDEX_SUFFIX] + [prefix + suffix for suffix in _DATA_SUFFIXES]


def _data_suffix_in_use(prefix: str) -> str | None:
    """The data file suffix the existing index of ``prefix`` names (None: no usable index)."""
    if not checkpoint_exists(prefix):
        return None
    try:
        return _load_index(prefix)[1]
    except (NotFoundError, DataLossError):
        return None


# ---------------------------------------------------------------- reading a checkpoint

def _checkpoints_in(directory: str) -> list[str]:
    """Names of the complete checkpoints in ``directory`` (prefix basenames), sorted."""
    pattern = os.path.join(glob.escape(directory), "*" + INDEX_SUFFIX)
    return sorted(os.path.basename(p)[:-len(INDEX_SUFFIX)] for p in glob.glob(pattern))


def _not_found(prefix: str) -> NotFoundError:
    message = ("Unsuccessful TensorSliceReader constructor: Failed to find any matching "
               f"files for {prefix}")
    directory = os.path.dirname(prefix) or "."
    for suffix in (INDEX_SUFFIX, DATA_SUFFIX):
        if prefix.endswith(suffix):
            return NotFoundError(message, hint="Pass the checkpoint prefix without the file "
                                 f"suffix: {prefix[:-len(suffix)]!r}.")
    if not os.path.isdir(directory):
        hint = f"The directory {directory} does not exist; check the path."
    elif names := _checkpoints_in(directory):
        hint = (f"Checkpoints in {directory}: {', '.join(names[-5:])}. "
                f"tf.train.latest_checkpoint({directory!r}) gives the newest.")
    else:
        hint = (f"There is no checkpoint in {directory}. Save one first; saver.save(sess, "
                "path) returns the prefix to restore from.")
    return NotFoundError(message, hint=hint)


def _corrupt(path: str, problem: object) -> DataLossError:
    return DataLossError(f"Checkpoint file {path} is corrupt: {problem}",
                         hint="Restore from an older checkpoint, or delete this one "
                              "(tf.train.latest_checkpoint then finds the previous one).")


def _suffix_of(data_file: object) -> str:
    """Which data file an index names (only the suffix counts: prefixes may be renamed)."""
    for suffix in _DATA_SUFFIXES:
        if isinstance(data_file, str) and data_file.endswith(suffix):
            return suffix
    raise ValueError(f"data_file {data_file!r} ends in none of {list(_DATA_SUFFIXES)}")


def _parse_index(raw: bytes, path: str) -> tuple[dict[str, TensorEntry], str]:
    """The entries and the data file suffix of an index file's bytes."""
    try:
        index = json.loads(raw)
        if index.get("format") != FORMAT or index.get("version") != VERSION:
            raise ValueError(f"unknown format {index.get('format')!r} version "
                             f"{index.get('version')!r} (expected {FORMAT!r} {VERSION})")
        entries = [TensorEntry(str(t["name"]), str(t["dtype"]),
                               tuple(int(d) for d in t["shape"]), int(t["crc32"]))
                   for t in index["tensors"]]
        suffix = _suffix_of(index.get("data_file", DATA_SUFFIX))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise _corrupt(path, err) from None
    return {entry.name: entry for entry in entries}, suffix


def _load_index(prefix: str) -> tuple[dict[str, TensorEntry], str]:
    """The entries of checkpoint ``prefix`` and the suffix of the data file it names."""
    try:
        with open(prefix + INDEX_SUFFIX, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise _not_found(prefix) from None
    return _parse_index(raw, prefix + INDEX_SUFFIX)


def read_index(prefix: str | os.PathLike) -> dict[str, TensorEntry]:
    """Name -> TensorEntry (dtype, shape, crc32) of checkpoint ``prefix``, without its data."""
    return _load_index(os.fspath(prefix))[0]


def _read_tensor(archive: zipfile.ZipFile, entry: TensorEntry, path: str) -> np.ndarray:
    with archive.open(entry.name + ".npy") as member:
        array = np.lib.format.read_array(member, allow_pickle=False)
    if array.dtype.name != entry.dtype or array.shape != entry.shape:
        raise _corrupt(path, f"tensor '{entry.name}' is {array.dtype.name} {list(array.shape)}"
                             f" but the index says {entry.dtype} {list(entry.shape)}")
    if _crc32(array) != entry.crc32:
        raise _corrupt(path, f"the checksum of tensor '{entry.name}' does not match")
    return array


def read_checkpoint(prefix: str | os.PathLike) -> dict[str, np.ndarray]:
    """All tensors of checkpoint ``prefix`` (name -> array), checksums verified."""
    prefix = os.fspath(prefix)
    entries, suffix = _load_index(prefix)
    path = prefix + suffix
    try:
        with zipfile.ZipFile(path) as archive:
            members = set(archive.namelist())
            expected = {name + ".npy" for name in entries}
            if members != expected:
                raise _corrupt(path, f"it holds {sorted(members)}, the index lists "
                                     f"{sorted(expected)}")
            return {name: _read_tensor(archive, e, path) for name, e in entries.items()}
    except FileNotFoundError:
        raise _corrupt(path, "the file is missing although its index exists") from None
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, struct.error) as err:
        raise _corrupt(path, err) from None


def checkpoint_exists(prefix: str | os.PathLike) -> bool:
    """Whether checkpoint ``prefix`` exists (its index file is the marker, as in TF)."""
    return os.path.isfile(os.fspath(prefix) + INDEX_SUFFIX)


def checkpoint_complete(prefix: str | os.PathLike) -> bool:
    """Whether ``prefix`` has a readable index and the data file that index names."""
    prefix = os.fspath(prefix)
    if not checkpoint_exists(prefix):
        return False
    try:
        suffix = _load_index(prefix)[1]
    except (NotFoundError, DataLossError, OSError):
        return False
    return os.path.isfile(prefix + suffix)


def delete_checkpoint(prefix: str | os.PathLike) -> None:
    """Delete checkpoint ``prefix`` (index first) and any temporary files it left."""
    for path in _files_of(os.fspath(prefix)):
        _remove(path)
        _remove_temp_files(path)


# ---------------------------------------------------------------- the state file

_LINE = re.compile(r'\s*(\w+)\s*:\s*(?:"((?:[^"\\]|\\.)*)"|[-+0-9.eE]+)\s*')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def _relative(directory: str, path: str) -> str:
    """``path`` relative to ``directory`` when inside it, else absolute."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(directory))
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return os.path.abspath(path)
    return relative


def update_checkpoint_state(directory: str | os.PathLike, latest_prefix: str | os.PathLike,
                            all_prefixes: Iterable[str | os.PathLike] | None = None,
                            latest_filename: str = STATE_FILENAME) -> None:
    """Atomically record ``latest_prefix`` as newest and ``all_prefixes`` as kept.

    The newest is always listed last among the kept ones, as TF does.
    """
    directory, latest = os.fspath(directory), os.fspath(latest_prefix)
    kept = [p for p in map(os.fspath, all_prefixes or []) if p != latest] + [latest]
    lines = [f"model_checkpoint_path: {_quote(_relative(directory, latest))}"]
    lines += [f"all_model_checkpoint_paths: {_quote(_relative(directory, p))}" for p in kept]
    text = ("\n".join(lines) + "\n").encode()
    path = os.path.join(directory, latest_filename)
    _remove_temp_files(path)
    _atomic_write(path, lambda f: f.write(text))


def _parse_state(text: str) -> CheckpointState:
    latest, kept = None, []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise ValueError(f"line {number} is not 'key: \"value\"': {line!r}")
        key, value = match.group(1), match.group(2)
        if key == "model_checkpoint_path" and value is not None:
            latest = _unquote(value)
        elif key == "all_model_checkpoint_paths" and value is not None:
            kept.append(_unquote(value))
    if not latest:
        raise ValueError("it names no model_checkpoint_path")
    return CheckpointState(latest, kept)


def get_checkpoint_state(directory: str | os.PathLike,
                         latest_filename: str = STATE_FILENAME) -> CheckpointState | None:
    """The state file of ``directory``, or None when there is none (or it is unreadable).

    Relative paths come back joined with ``directory``; a malformed file gives a warning
    and None, as in TF.
    """
    directory = os.fspath(directory)
    path = os.path.join(directory, latest_filename)
    try:
        with open(path, encoding="utf-8") as f:
            state = _parse_state(f.read())
    except FileNotFoundError:
        return None
    except (ValueError, OSError) as err:
        warnings.warn(f"{path}: {err}. Checkpoint ignored; delete or fix this file.",
                      stacklevel=2)
        return None
    # os.path.join leaves absolute paths as they are.
    state.model_checkpoint_path = os.path.join(directory, state.model_checkpoint_path)
    state.all_model_checkpoint_paths = [os.path.join(directory, p)
                                        for p in state.all_model_checkpoint_paths]
    return state


def latest_checkpoint(directory: str | os.PathLike,
                      latest_filename: str = STATE_FILENAME) -> str | None:
    """The prefix of the newest complete checkpoint in ``directory``, or None.

    When the state file's newest checkpoint is incomplete or missing (a save or delete was
    interrupted, or its files were removed by hand), the newest complete one among
    ``all_model_checkpoint_paths`` is returned, with a logged warning naming both (TF
    returns None there, and a chief restoring it fails).
    """
    state = get_checkpoint_state(directory, latest_filename)
    if state is None:
        return None
    newest = state.model_checkpoint_path
    if checkpoint_complete(newest):
        return newest
    for older in reversed(state.all_model_checkpoint_paths):
        if older != newest and checkpoint_complete(older):
            _log.warning("Checkpoint %s is incomplete or missing; skipping it and using %s, "
                         "the newest complete checkpoint listed in %s.", newest, older,
                         os.path.join(os.fspath(directory), latest_filename))
            return older
    warnings.warn(f"Couldn't match files for checkpoint {state.model_checkpoint_path}; "
                  "it was deleted or never completed.", stacklevel=2)
    return None
