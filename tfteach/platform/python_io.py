"""``tf.python_io`` (also in ``tf.io``): TFRecord files, written and read as TF does.

``TFRecordWriter(path, options)`` writes one record per ``write`` in TF's framing
(``tfteach.framework.record_io``: length, masked CRC32C of the length, data, masked CRC32C
of the data), so TensorFlow reads the files and tfteach reads TensorFlow's;
``tf_record_iterator(path, options)`` yields the records as ``bytes``, checking every
checksum (DataLossError for a damaged or cut-off file). ``options`` is a
``TFRecordOptions``, a ``TFRecordCompressionType`` or a string: ``""`` (none), ``"GZIP"``
(a gzip stream) or ``"ZLIB"`` (a zlib stream), as TF compresses the whole file.
``open_records`` opens a file for reading in the same way, for ``tf.data.TFRecordDataset``.
"""
from __future__ import annotations

import gzip
import io
import os
import zlib
from typing import IO, Any, Iterator

from tfteach import errors
from tfteach.framework.record_io import encode_record, read_records
from tfteach.i18n import tr

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter",
           "tf_record_iterator", "open_records"]


class TFRecordCompressionType:
    """How a TFRecord file is compressed (TF's enum values)."""
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """Options of a TFRecord file; tfteach uses ``compression_type`` (and for writing
    ``compression_level``) and accepts TF's other arguments."""

    compression_type_map = {TFRecordCompressionType.NONE: "",
                            TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP"}

    def __init__(self, compression_type: Any = None, flush_mode: Any = None,
                 input_buffer_size: Any = None, output_buffer_size: Any = None,
                 window_bits: Any = None, compression_level: int | None = None,
                 compression_method: Any = None, mem_level: Any = None,
                 compression_strategy: Any = None) -> None:
        self.compression_type = compression_type
        self.compression_level = compression_level

    @classmethod
    def get_compression_type_string(cls, options: Any) -> str:
        """``""``, ``"ZLIB"`` or ``"GZIP"`` for options, an enum value or a string."""
        if isinstance(options, TFRecordOptions):
            options = options.compression_type
        if options is None:
            return ""
        kind = cls.compression_type_map.get(options, options)
        if kind not in ("", "ZLIB", "GZIP"):
            raise ValueError(f'Unsupported compression type: {options}. Supported types '
                             'are: "", "ZLIB", "GZIP"')
        return kind


def _missing(path: str) -> errors.NotFoundError:
    return errors.NotFoundError(f"{path}; No such file or directory", hint=tr(
        "relative paths start at the working directory, {cwd}.", cwd=os.getcwd()))


def open_records(path: str, compression: str = "") -> IO[bytes]:
    """``path`` opened for reading its records, decompressed (NotFoundError if missing)."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise _missing(path) from None
    if compression == "GZIP":
        f.close()
        return gzip.open(path, "rb")
    if compression == "ZLIB":
        with f:
            return io.BytesIO(zlib.decompress(f.read()))
    return f


def tf_record_iterator(path: str, options: Any = None) -> Iterator[bytes]:
    """The records of the TFRecord file ``path``, one ``bytes`` each."""
    with open_records(path, TFRecordOptions.get_compression_type_string(options)) as f:
        yield from read_records(f, path)


class _ZlibFile:
    """A zlib stream written to a file (TF's ZLIB compression of a whole record file)."""

    def __init__(self, f: IO[bytes], level: int) -> None:
        self._file, self._zip = f, zlib.compressobj(level)

    def write(self, data: bytes) -> None:
        self._file.write(self._zip.compress(data))

    def flush(self) -> None:
        self._file.write(self._zip.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        self._file.write(self._zip.flush())
        self._file.close()


class TFRecordWriter:
    """Writes records to a TFRecord file: ``with tf.python_io.TFRecordWriter(path) as w:
    w.write(example.SerializeToString())``."""

    def __init__(self, path: str, options: Any = None) -> None:
        kind = TFRecordOptions.get_compression_type_string(options)
        level = getattr(options, "compression_level", None)
        level = -1 if level is None else level
        try:
            self._file: Any = open(path, "wb") if kind == "" else \
                _ZlibFile(open(path, "wb"), level) if kind == "ZLIB" else \
                gzip.open(path, "wb", compresslevel=9 if level < 0 else level)
        except FileNotFoundError:
            raise errors.NotFoundError(
                f"Failed to create a NewWriteableFile: {path} : No such file or directory",
                hint=tr("create the folder first (tf.gfile.MakeDirs).")) from None

    def write(self, record: bytes | str) -> None:
        """Append one record (``str`` is written as UTF-8)."""
        if self._file is None:
            raise errors.FailedPreconditionError("File is closed.")
        self._file.write(encode_record(record.encode() if isinstance(record, str) else
                                       bytes(record)))

    def flush(self) -> None:
        """Write what is buffered to the file (a reader then sees every record so far)."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        """Finish the file; later writes fail."""
        file, self._file = self._file, None
        if file is not None:
            file.close()

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
