"""``tf.gfile``: TF 1.x's file API on local files, with TF's error classes and messages.

``GFile`` opens its file on first use, as TF's does (a missing file is NotFoundError at the
first read, not at ``GFile(...)``); ``'r'`` reads ``str``, ``'rb'`` reads ``bytes``. Paths
are local; TF's remote file systems (``gs://``, ``hdfs://``) are not here.
"""
from __future__ import annotations

import glob as _glob
import os
import shutil
from typing import IO, Any, Iterator

from tfteach import errors
from tfteach.i18n import tr

_MODES = ("r", "w", "a", "r+", "w+", "a+")


def _not_found(message: str) -> errors.NotFoundError:
    return errors.NotFoundError(message, hint=tr(
        "relative paths start at the working directory, {cwd}.", cwd=os.getcwd()))


class GFile:
    """TF's file object: ``with tf.gfile.GFile(path, 'w') as f: f.write(...)``."""

    def __init__(self, name: str, mode: str = "r") -> None:
        if mode.replace("b", "") not in _MODES:
            raise errors.InvalidArgumentError(
                "mode is not 'r' or 'w' or 'a' or 'r+' or 'w+' or 'a+'")
        self.name, self.mode = os.fspath(name), mode
        self._file: IO[Any] | None = None

    def _open(self, reading: bool) -> IO[Any]:
        if reading and not (self.mode.startswith("r") or "+" in self.mode):
            raise errors.PermissionDeniedError("File isn't open for reading")
        if not reading and self.mode.replace("b", "") == "r":
            raise errors.PermissionDeniedError("File isn't open for writing")
        if self._file is None:
            try:
                self._file = open(self.name, self.mode, newline="" if "b" not in self.mode
                                  else None)
            except FileNotFoundError:
                raise _not_found(f"{self.name}; No such file or directory") from None
            except IsADirectoryError:
                raise errors.FailedPreconditionError(f"{self.name}; Is a directory") from None
        return self._file

    def read(self, n: int = -1) -> Any:
        return self._open(True).read(n)

    def readline(self) -> Any:
        return self._open(True).readline()

    def readlines(self) -> list:
        return self._open(True).readlines()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._open(True))

    def __next__(self) -> Any:
        return next(self._open(True))

    next = __next__

    def write(self, data: Any) -> None:
        self._open(False).write(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._open(True).seek(offset, whence)

    def tell(self) -> int:
        return self._open(self.mode.startswith("r")).tell()

    def size(self) -> int:
        return Stat(self.name).length

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "GFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


Open = GFile
FastGFile = GFile


class FileStatistics:
    """What ``Stat`` returns: ``length``, ``mtime_nsec``, ``is_directory``."""

    def __init__(self, length: int, mtime_nsec: int, is_directory: bool) -> None:
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory


def Exists(filename: str) -> bool:
    return os.path.exists(filename)


def IsDirectory(dirname: str) -> bool:
    return os.path.isdir(dirname)


def Stat(filename: str) -> FileStatistics:
    try:
        st = os.stat(filename)
    except FileNotFoundError:
        raise _not_found(f"{filename}; No such file or directory") from None
    return FileStatistics(st.st_size, st.st_mtime_ns, os.path.isdir(filename))


def MkDir(dirname: str) -> None:
    """One directory (its parent must exist); one that exists already is fine, as in TF 2."""
    if not os.path.isdir(os.path.dirname(os.path.abspath(dirname))):
        raise _not_found(f"{dirname}; No such file or directory")
    os.makedirs(dirname, exist_ok=True)


def MakeDirs(dirname: str) -> None:
    try:
        os.makedirs(dirname, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise errors.FailedPreconditionError(
            f"{_first_file(dirname)} is not a directory") from None


def _first_file(path: str) -> str:
    """The first component of ``path`` that exists and is not a directory."""
    parts = os.path.abspath(path).split(os.sep)
    for i in range(2, len(parts) + 1):
        head = os.sep.join(parts[:i])
        if os.path.exists(head) and not os.path.isdir(head):
            return head if os.path.isabs(path) else os.path.relpath(head)
    return path


def ListDirectory(dirname: str) -> list[str]:
    if not os.path.isdir(dirname):
        raise _not_found(f"Could not find directory {dirname}")
    return os.listdir(dirname)


def Glob(filename: str) -> list[str]:
    return _glob.glob(filename)


def Walk(top: str, in_order: bool = True) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirname, subdirs, files)`` for ``top`` and every directory under it."""
    walk = list(os.walk(top))
    yield from walk if in_order else reversed(walk)


def Remove(filename: str) -> None:
    if os.path.isdir(filename):
        raise errors.FailedPreconditionError(f"{filename}; Is a directory")
    try:
        os.remove(filename)
    except FileNotFoundError:
        raise _not_found(f"{filename}; No such file or directory") from None


def DeleteRecursively(dirname: str) -> None:
    if not os.path.exists(dirname):
        raise _not_found(f"{dirname} not found")
    if os.path.isdir(dirname):
        shutil.rmtree(dirname)
    else:
        os.remove(dirname)


def _check_target(newpath: str, overwrite: bool) -> None:
    if not overwrite and os.path.exists(newpath):
        raise errors.AlreadyExistsError("file already exists")


def Rename(oldname: str, newname: str, overwrite: bool = False) -> None:
    _check_target(newname, overwrite)
    if not os.path.exists(oldname):
        raise _not_found(f"{oldname}; No such file or directory")
    os.replace(oldname, newname)


def Copy(oldpath: str, newpath: str, overwrite: bool = False) -> None:
    _check_target(newpath, overwrite)
    if not os.path.exists(oldpath):
        raise _not_found(f"{oldpath}; No such file or directory")
    shutil.copyfile(oldpath, newpath)


def __getattr__(name: str):
    """A name tf.gfile has and tfteach lacks: an AttributeError that says so."""
    raise errors.missing_attribute("tfteach.platform.gfile", f"tf.gfile.{name}", name)
