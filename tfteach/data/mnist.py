"""MNIST, read from the IDX files a learner already has on disk (nothing is downloaded).

IDX layout (big-endian): two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16,
0x0C int32, 0x0D float32, 0x0E float64), the number of dimensions d, then d uint32 sizes,
then the values in C order. Read as one uint32, the first four bytes are the magic number:
MNIST images are 2051 (uint8, d = 3: count, rows, columns), labels are 2049 (uint8, d = 1).

A file is accepted raw or gzipped (``NAME.gz``); the raw one wins when both exist. A
missing file is a ``NotFoundError`` saying which names to put where; an unreadable one
(bad magic, truncated, bad gzip) is a ``DataLossError`` naming the file.
"""
from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from tfteach.errors import DataLossError, NotFoundError
from tfteach.i18n import tr

IMAGES_MAGIC = 2051
LABELS_MAGIC = 2049
# (images file, labels file) of the training and the test part, in that order.
MNIST_FILES = (("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def _corrupt(path: Path, problem: str) -> DataLossError:
    return DataLossError(f"{path} is not a valid IDX file: {problem}.",
                         hint=tr("Download this file again; MNIST files must be the original "
                                 "IDX files (raw or .gz), not images or archives of them."))


def _read_bytes(path: Path) -> bytes:
    """The file's contents, gunzipped when its name ends in .gz."""
    if path.suffix != ".gz":
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as err:
        raise _corrupt(path, f"it cannot be gunzipped ({err})") from None


def parse_idx(data: bytes, path: Path, magic: int | None = None) -> np.ndarray:
    """The array stored in IDX bytes ``data`` (read from ``path``, named in errors).

    With ``magic`` given, the file's magic number must equal it.
    """
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] not in _IDX_TYPES:
        raise _corrupt(path, f"it does not start with an IDX magic number "
                             f"(first bytes {data[:4].hex() or 'missing'})")
    found = int.from_bytes(data[:4], "big")
    if magic is not None and found != magic:
        raise _corrupt(path, f"its magic number is {found}, expected {magic} "
                             f"({'images' if magic == IMAGES_MAGIC else 'labels'}), "
                             "so the images and labels files may be swapped")
    header = 4 + 4 * data[3]
    if len(data) < header:
        raise _corrupt(path, "its header is cut short")
    shape = struct.unpack(f">{data[3]}I", data[4:header])
    dtype = np.dtype(_IDX_TYPES[data[2]])
    expected = header + math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        raise _corrupt(path, f"its header announces shape {list(shape)} ({expected} bytes) "
                             f"but the file has {len(data)} bytes")
    return np.frombuffer(data, dtype, offset=header).reshape(shape)


def read_idx(path: str | os.PathLike, magic: int | None = None) -> np.ndarray:
    """The array in an IDX file (raw, or gzipped when the name ends in .gz)."""
    path = Path(path)
    return parse_idx(_read_bytes(path), path, magic)


def _locate(directory: Path, name: str) -> Path | None:
    for candidate in (directory / name, directory / f"{name}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _missing(directory: Path, missing: list[str]) -> NotFoundError:
    where = "" if directory.is_dir() else " (the directory does not exist)"
    all_names = ", ".join(name for pair in MNIST_FILES for name in pair)
    return NotFoundError(
        f"MNIST files not found in {directory}{where}: missing {', '.join(missing)}.",
        hint=tr("Put these 4 files in {directory}: {names}. Gzipped copies are fine too "
                "(e.g. train-images-idx3-ubyte.gz).", directory=directory, names=all_names))


def _load_part(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    images = read_idx(images_path, IMAGES_MAGIC)
    labels = read_idx(labels_path, LABELS_MAGIC)
    if images.ndim != 3 or labels.ndim != 1:
        raise _corrupt(images_path if images.ndim != 3 else labels_path,
                       "images need 3 dimensions and labels 1")
    if len(images) != len(labels):
        raise DataLossError(f"{images_path} holds {len(images)} images but {labels_path} "
                            f"holds {len(labels)} labels.",
                            hint=tr("Both files must come from the same part (train or t10k) "
                                    "of the same MNIST download."))
    return images.reshape(len(images), -1).astype(np.float32), labels.astype(np.int64)


def load_mnist(path: str | os.PathLike) -> tuple[tuple[np.ndarray, np.ndarray],
                                                 tuple[np.ndarray, np.ndarray]]:
    """MNIST from directory ``path`` as ``((x_train, y_train), (x_test, y_test))``.

    ``x`` is float32 ``[n, 784]`` with raw pixel values 0..255 (divide by 255 to scale),
    ``y`` is int64 digits 0..9. The directory must hold the four files named in
    ``MNIST_FILES``, each raw or as ``NAME.gz``.
    """
    directory = Path(path).expanduser()
    found = {name: _locate(directory, name) for pair in MNIST_FILES for name in pair}
    missing = [name for name, file in found.items() if file is None]
    if missing:
        raise _missing(directory, missing)
    train, test = (_load_part(found[images], found[labels]) for images, labels in MNIST_FILES)
    return train, test
