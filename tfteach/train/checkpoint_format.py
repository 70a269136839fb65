"""The on-disk checkpoints behind ``tf.train.Saver``: TensorFlow's V2 format, written safely.

A checkpoint is named by its *prefix* ``P`` (e.g. ``/train/model.ckpt-100``, what
``Saver.save`` returns). It is written in TF's V2 format, so real TensorFlow restores it
(``tf.train.Saver.restore``, ``tf.train.load_checkpoint``) and tfteach restores the ones TF
wrote; ``tfteach.train.tensor_bundle`` describes the bytes. Two files::

    P.index                   a sorted table: "" -> BundleHeaderProto, then one
                              BundleEntryProto per tensor (dtype, shape, offset, size,
                              masked crc32c of its bytes)
    P.data-00000-of-00001     the tensors' raw little-endian bytes, one after another

Only bool and numeric (int, uint, float, complex) arrays are saved. Checkpoints of
tfteach's first format (``P.index.json`` + ``P.data.npz``, ``tfteach.train
.legacy_checkpoint``) are still read; a prefix with both reads the V2 one.

The directory's state file ``checkpoint`` is TF's text format. It names the newest
checkpoint, then all kept ones (oldest first, newest last), relative to the directory
when they lie inside it and absolute otherwise::

    model_checkpoint_path: "model.ckpt-100"
    all_model_checkpoint_paths: "model.ckpt-50"
    all_model_checkpoint_paths: "model.ckpt-100"

Invariants (crash safety): every file is first written to ``<file>.tmp<random>`` in the
same directory, fsynced, then renamed over its final name with ``os.replace``, so readers
see a whole file or none. The data files are renamed into place before the index, and
only the index names them (its header's ``num_shards``), so a prefix whose index exists
has its complete data (the checksums prove it). Saving over an existing prefix writes its
data under the *other* data file names: a one-shard checkpoint is replaced by a two-shard
one (all tensors in ``P.data-00000-of-00002``, an empty ``P.data-00001-of-00002``; TF reads
both layouts) and the other way round, so the old checkpoint stays whole until the new
index replaces it in one rename, and only then are the old data files removed. Deleting
removes the index first. The state file is updated (the same way) only after the
checkpoint is complete, and callers delete old checkpoints only after the state file no
longer names them. A writer killed midway leaves at most temporary or unreferenced files,
which nothing reads and the next write or delete of that prefix removes.

Reading (``latest_checkpoint``): when the state file's newest checkpoint is incomplete
or missing, the newest complete one it lists is used instead, with a logged warning.
"""
from __future__ import annotations

import errno
import glob
import logging
import os
import re
import secrets
import warnings
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import IO, NamedTuple

import numpy as np

from tfteach.errors import (DataLossError, InvalidArgumentError, NotFoundError,
                            ResourceExhaustedError)
from tfteach.i18n import tr
from tfteach.train import checkpoint_slices as slices
from tfteach.train import legacy_checkpoint as legacy
from tfteach.train import tensor_bundle as bundle
from tfteach.train.tensor_bundle import TensorEntry

INDEX_SUFFIX = bundle.INDEX_SUFFIX
DATA_SUFFIX = ".data-00000-of-00001"
STATE_FILENAME = "checkpoint"
TEMP_MARK = ".tmp"
_SAVABLE_KINDS = "biufc"  # bool, int, uint, float, complex
# Every file a checkpoint prefix may have, in either format, finished or temporary.
_FILE_OF_PREFIX = re.compile(r"\.(index|index\.json|data\.npz|data\.1\.npz|"
                             r"data-\d{5}-of-\d{5})(" + re.escape(TEMP_MARK) + r"\w+)?")
_log = logging.getLogger("tfteach.train")

__all__ = ["CheckpointState", "TensorEntry", "checkpoint_complete", "checkpoint_exists",
           "data_files", "delete_checkpoint", "get_checkpoint_state", "latest_checkpoint",
           "read_checkpoint", "read_index", "update_checkpoint_state", "write_checkpoint"]


class _Index(NamedTuple):
    """A checkpoint's index as read: its entries and the data files it names, by shard."""
    entries: dict[str, TensorEntry]
    data_files: list[str]
    legacy: bool = False


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
    except BaseException as exc:
        _remove(temp)
        if isinstance(exc, OSError) and exc.errno in _DISK_FULL:
            raise _disk_full(temp, exc) from None
        raise
    _fsync_directory(os.path.dirname(path) or ".")


_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _disk_full(path: str, exc: OSError) -> ResourceExhaustedError:
    """TF's error for a write that found no room (ENOSPC is RESOURCE_EXHAUSTED in TF)."""
    folder = os.path.dirname(os.path.abspath(path))
    return ResourceExhaustedError(
        f"{path}; {exc.strerror or os.strerror(exc.errno)}",
        hint=tr("The disk that holds {folder} has no room for this file: free some space "
                "there (old checkpoints, or a smaller Saver(max_to_keep=...)) or save to a "
                "directory on another disk.", folder=folder))


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _remove_temp_files(path: str) -> None:
    """Delete temporary files a killed writer of ``path`` left behind."""
    for temp in glob.glob(glob.escape(path + TEMP_MARK) + "*"):
        _remove(temp)


def _files_on_disk(prefix: str) -> list[str]:
    """Every file of checkpoint ``prefix`` there is: indexes, data and temporary files."""
    found = glob.glob(glob.escape(prefix) + ".*")
    return sorted(p for p in found if _FILE_OF_PREFIX.fullmatch(p[len(prefix):]))


# ---------------------------------------------------------------- writing a checkpoint

def _savable(name: object, value: object) -> np.ndarray:
    """``value`` as a C-ordered little-endian array, after checking name and dtype."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise InvalidArgumentError(f"Cannot save a tensor named {name!r}: names must be "
                                   "non-empty strings.", hint=tr(
                                       "Save variables by their op names, e.g. "
                                       "{'layer1/weights': value}."))
    array = np.asarray(value)
    if array.dtype.kind not in _SAVABLE_KINDS:
        raise InvalidArgumentError(f"Cannot save tensor '{name}' of dtype {array.dtype}: "
                                   "checkpoints hold bool and numeric arrays only.",
                                   hint=tr("Leave this tensor out of the Saver's var_list."))
    return np.asarray(array.astype(array.dtype.newbyteorder("<"), copy=False), order="C")


def write_checkpoint(prefix: str | os.PathLike, tensors: Mapping[str, np.ndarray],
                     sliced: Mapping[str, tuple] | None = None) -> str:
    """Save ``tensors`` (name -> array) as checkpoint ``prefix``, atomically; returns prefix.

    ``sliced`` holds partitioned variables, saved in slices as TF saves them:
    name -> (full shape, [(extents, array)]), extents ``((start, length), ...)`` per axis.

    Overwriting an existing prefix keeps the old checkpoint whole until the new index
    replaces it, so a crash leaves either the old checkpoint or the new one, never a mix
    and never neither.
    """
    prefix = os.fspath(prefix)
    arrays = {name: _savable(name, value) for name, value in tensors.items()}
    full_entries = {}
    for name, (full_shape, parts) in (sliced or {}).items():
        for extents, value in parts:
            arrays[slices.slice_key(name, extents)] = _savable(name, value)
        full_entries[name] = TensorEntry(name, _savable(name, parts[0][1]).dtype.name,
                                         tuple(full_shape), 0,
                                         slices=tuple(tuple(e) for e, _ in parts))
    # TF's SaveV2 creates the prefix's directory (tf.compat.v1 Saver.save into a new folder
    # works); a path that cannot be a directory still fails there, as below.
    parent = os.path.dirname(prefix) or "."
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise NotFoundError(f"Parent directory of {prefix} doesn't exist, can't save: {exc}",
                            hint=tr("Save under a folder you can create: {folder} is not one.",
                                    folder=repr(parent))) from None
    for path in _files_on_disk(prefix):
        if TEMP_MARK in path[len(prefix):]:
            _remove(path)
    num_shards = 2 if _shards_in_use(prefix) == 1 else 1
    data_files = [bundle.data_filename(prefix, s, num_shards) for s in range(num_shards)]
    try:
        _atomic_write(data_files[0], lambda f: bundle.write_data(f, arrays))
        for empty in data_files[1:]:
            _atomic_write(empty, lambda f: None)
        index = bundle.index_bytes({**bundle.layout(arrays), **full_entries}, num_shards)
        _atomic_write(prefix + INDEX_SUFFIX, lambda f: f.write(index))
    except BaseException:   # no index names these names (they are the other ones): drop them
        for path in data_files:
            _remove(path)
        raise
    for path in _files_on_disk(prefix):  # the replaced data, or what a killed save left
        if path != prefix + INDEX_SUFFIX and path not in data_files:
            _remove(path)
    return prefix


def _shards_in_use(prefix: str) -> int | None:
    """How many data files the existing V2 index of ``prefix`` names (None: no usable one)."""
    if not os.path.isfile(prefix + INDEX_SUFFIX):
        return None
    try:
        index = _load_index(prefix)
    except (NotFoundError, DataLossError):
        return None
    return len(index.data_files)


# ---------------------------------------------------------------- reading a checkpoint

def _checkpoints_in(directory: str) -> list[str]:
    """Names of the checkpoints in ``directory`` (prefix basenames), sorted."""
    names = set()
    for suffix in (INDEX_SUFFIX, legacy.INDEX_SUFFIX):
        pattern = os.path.join(glob.escape(directory), "*" + suffix)
        names.update(os.path.basename(p)[:-len(suffix)] for p in glob.glob(pattern))
    return sorted(names)


def _not_found(prefix: str) -> NotFoundError:
    message = ("Unsuccessful TensorSliceReader constructor: Failed to find any matching "
               f"files for {prefix}")
    directory = os.path.dirname(prefix) or "."
    match = re.search(r"\.(index|index\.json|data-\d{5}-of-\d{5}|data\.npz)$", prefix)
    if match:
        return NotFoundError(message, hint=tr(
            "Pass the checkpoint prefix without the file suffix: {prefix}.",
            prefix=repr(prefix[:match.start()])))
    if not os.path.isdir(directory):
        hint = tr("The directory {directory} does not exist; check the path.",
                  directory=directory)
    elif names := _checkpoints_in(directory):
        hint = tr("Checkpoints in {directory}: {names}. tf.train.latest_checkpoint({quoted}) "
                  "gives the newest.", directory=directory, names=", ".join(names[-5:]),
                  quoted=repr(directory))
    else:
        hint = tr("There is no checkpoint in {directory}. Save one first; saver.save(sess, "
                  "path) returns the prefix to restore from.", directory=directory)
    return NotFoundError(message, hint=hint)


def _corrupt(path: str, problem: object) -> DataLossError:
    return DataLossError(f"Checkpoint file {path} is corrupt: {problem}",
                         hint=tr("Restore from an older checkpoint, or delete this one "
                                 "(tf.train.latest_checkpoint then finds the previous one)."))


def _parse_v2(prefix: str, raw: bytes) -> _Index:
    header, entries = bundle.parse_index(raw)
    shards = header.num_shards
    return _Index(entries, [bundle.data_filename(prefix, s, shards) for s in range(shards)])


def _parse_legacy(prefix: str, raw: bytes) -> _Index:
    entries, suffix = legacy.parse_index(raw)
    return _Index(entries, [prefix + suffix], legacy=True)


def _load_index(prefix: str) -> _Index:
    """The index of checkpoint ``prefix``: V2 if it has one, else the first format's."""
    for suffix, parse in ((INDEX_SUFFIX, _parse_v2), (legacy.INDEX_SUFFIX, _parse_legacy)):
        try:
            with open(prefix + suffix, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            continue
        try:
            return parse(prefix, raw)
        except Exception as err:  # noqa: BLE001 (any failure to parse is the file's fault)
            raise _corrupt(prefix + suffix, err) from None
    raise _not_found(prefix)


def data_files(prefix: str | os.PathLike) -> list[str]:
    """The data files the index of checkpoint ``prefix`` names, in shard order."""
    return _load_index(os.fspath(prefix)).data_files


def read_index(prefix: str | os.PathLike) -> dict[str, TensorEntry]:
    """Name -> TensorEntry (dtype, shape, checksum) of checkpoint ``prefix``, without data
    (a sliced tensor once, with its full shape; not its slices)."""
    return {name: e for name, e in _load_index(os.fspath(prefix)).entries.items()
            if isinstance(name, str)}


def _read_shard(path: str, entries: list[TensorEntry]) -> dict[str, np.ndarray]:
    with open(path, "rb") as f:
        return {e.name: bundle.read_tensor(f, e) for e in entries if not e.slices}


def read_checkpoint(prefix: str | os.PathLike) -> dict[str, np.ndarray]:
    """All tensors of checkpoint ``prefix`` (name -> array), checksums verified."""
    index = _load_index(os.fspath(prefix))
    out: dict[str, np.ndarray] = {}
    for shard, path in enumerate(index.data_files):
        entries = [e for e in index.entries.values() if e.shard_id == shard]
        try:
            if index.legacy:
                out.update(legacy.read_tensors(path, index.entries))
            elif entries:
                out.update(_read_shard(path, entries))
        except FileNotFoundError:
            raise _corrupt(path, "the file is missing although its index exists") from None
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as err:
            raise _corrupt(path, err) from None
    return _assembled(prefix, index, out)


def _assembled(prefix: str | os.PathLike, index: _Index, read: dict) -> dict[str, np.ndarray]:
    """The tensors by name, a sliced one put back together from its slices."""
    out = {name: value for name, value in read.items() if isinstance(name, str)}
    for e in index.entries.values():
        if e.slices:
            try:
                out[e.name] = slices.assemble(e.name, e.dtype, e.shape, e.slices, read)
            except ValueError as err:
                raise _corrupt(os.fspath(prefix) + INDEX_SUFFIX, err) from None
    return out


def checkpoint_exists(prefix: str | os.PathLike) -> bool:
    """Whether checkpoint ``prefix`` exists (its index file is the marker, as in TF)."""
    prefix = os.fspath(prefix)
    return os.path.isfile(prefix + INDEX_SUFFIX) or os.path.isfile(prefix + legacy.INDEX_SUFFIX)


def checkpoint_complete(prefix: str | os.PathLike) -> bool:
    """Whether ``prefix`` has a readable index and every data file that index names."""
    prefix = os.fspath(prefix)
    if not checkpoint_exists(prefix):
        return False
    try:
        return all(os.path.isfile(path) for path in _load_index(prefix).data_files)
    except (NotFoundError, DataLossError, OSError):
        return False


def delete_checkpoint(prefix: str | os.PathLike) -> None:
    """Delete checkpoint ``prefix`` (index first) and any temporary files it left."""
    prefix = os.fspath(prefix)
    for index in (prefix + INDEX_SUFFIX, prefix + legacy.INDEX_SUFFIX):
        _remove(index)
    for path in _files_on_disk(prefix):
        _remove(path)


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
