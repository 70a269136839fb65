"""``tf.data`` datasets that read files: ``TextLineDataset`` (the lines of text files) and
``TFRecordDataset`` (the records of TFRecord files, plain, GZIP or ZLIB).

A file is opened when the iterator reaches it, so a missing file is NotFoundError at the
``get_next`` that needs it, as in TF; a damaged record is DataLossError there. As TF builds
it, ``TFRecordDataset(filenames)`` is the file names flattened (``flat_filenames``), sliced
(``TensorSliceDataset``) and flat-mapped to one ``TFRecordDataset`` op per file, or
interleaved ``num_parallel_reads`` files at a time. Dataset ops run on the CPU only.
"""
from __future__ import annotations

import os
from typing import Any, Iterator

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import get_default_graph
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.framework.record_io import read_records
from tfteach.ops import array_ops
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.dataset_ops import Dataset, dataset_attrs
from tfteach.platform.python_io import open_records

__all__ = ["TextLineDataset", "TFRecordDataset"]

_VARIANT = [(dtypes.variant, TensorShape([]))]


class _TextLines:
    def __init__(self, names: list, op: Any) -> None:
        self.names = names
        self.op = op

    def elements(self, env: Any) -> Iterator[tuple]:
        for name in self.names:
            try:
                f = open(name, "rb")
            except OSError:
                raise errors.NotFoundError(f"{name}; No such file or directory", op=self.op,
                                           hint=tr("check the file name and the working "
                                                   "directory ({cwd}).",
                                                   cwd=os.getcwd())) from None
            with f:
                for line in f:
                    yield (np.array(line.rstrip(b"\n").rstrip(b"\r"), dtype=object),)


def _names(ctx: Any, names: Any) -> list[str]:
    flat = np.asarray(ctx.device.to_host(names), dtype=object).ravel()
    return [n.decode() if isinstance(n, bytes) else str(n) for n in flat]


def _text_kernel(ctx: Any, names: Any, compression: Any, buffer_size: Any) -> _TextLines:
    return _TextLines(_names(ctx, names), ctx.op)


class _Records:
    def __init__(self, names: list, compression: str) -> None:
        self.names, self.compression = names, compression

    def elements(self, env: Any) -> Iterator[tuple]:
        for name in self.names:
            with open_records(name, self.compression) as f:
                for record in read_records(f, name):
                    yield (np.array(record, dtype=object),)


def _records_kernel(ctx: Any, names: Any, compression: Any, buffer_size: Any) -> _Records:
    kind = np.asarray(ctx.device.to_host(compression), dtype=object).item()
    return _Records(_names(ctx, names), kind.decode() if isinstance(kind, bytes) else kind)


for _type, _kernel in (("TextLineDataset", _text_kernel), ("TFRecordDataset", _records_kernel)):
    register_op(_type, lambda op: _VARIANT, _kernel, gpu_types=frozenset(), cheap=True)
    not_differentiable(_type)


class TextLineDataset(Dataset):
    """``tf.data.TextLineDataset(filenames)``: the lines of the files, without line ends."""

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None) -> None:
        g = get_default_graph()
        inputs = _file_inputs(filenames, compression_type, buffer_size)
        variant = g.create_op("TextLineDataset", inputs,
                              dataset_attrs(dtypes.string, TensorShape([])),
                              name="TextLineDataset").outputs[0]
        super().__init__(variant, dtypes.string, TensorShape([]))


def _file_inputs(filenames: Any, compression_type: Any, buffer_size: Any) -> list:
    return [convert_to_tensor(filenames, dtype=dtypes.string, name="filenames"),
            convert_to_tensor(compression_type or "", dtype=dtypes.string,
                              name="compression_type"),
            convert_to_tensor(256 * 1024 if buffer_size is None else buffer_size,
                              dtype=dtypes.int64, name="buffer_size")]


class TFRecordDataset(Dataset):
    """``tf.data.TFRecordDataset(filenames)``: the records of TFRecord files, as strings
    (``num_parallel_reads`` files interleaved, one record from each in turn)."""

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None) -> None:
        names = array_ops.reshape(convert_to_tensor(filenames, dtype=dtypes.string), [-1],
                                  name="flat_filenames")
        files = Dataset.from_tensor_slices(names)

        def read_one_file(filename: Any) -> Dataset:
            inputs = _file_inputs(filename, compression_type, buffer_size)
            variant = filename.graph.create_op("TFRecordDataset", inputs, dataset_attrs(
                dtypes.string, TensorShape([])), name="TFRecordDataset").outputs[0]
            return Dataset(variant, dtypes.string, TensorShape([]))

        records = files.flat_map(read_one_file) if num_parallel_reads is None else \
            files.interleave(read_one_file, cycle_length=num_parallel_reads, block_length=1)
        super().__init__(records._variant_tensor, dtypes.string, TensorShape([]))
