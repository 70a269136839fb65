"""``tf.data`` datasets that read files: ``TextLineDataset`` (the lines of text files).

A file is opened when the iterator reaches it, so a missing file is NotFoundError at the
``get_next`` that needs it, as in TF. Dataset ops run on the CPU only.
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
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.dataset_ops import Dataset, dataset_attrs

__all__ = ["TextLineDataset"]

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


register_op("TextLineDataset", lambda op: _VARIANT, _text_kernel, gpu_types=frozenset(),
            cheap=True)
not_differentiable("TextLineDataset")


class TextLineDataset(Dataset):
    """``tf.data.TextLineDataset(filenames)``: the lines of the files, without line ends."""

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None) -> None:
        g = get_default_graph()
        inputs = [convert_to_tensor(filenames, dtype=dtypes.string, name="filenames"),
                  convert_to_tensor(compression_type or "", dtype=dtypes.string,
                                    name="compression_type"),
                  convert_to_tensor(buffer_size or 256 * 1024, dtype=dtypes.int64,
                                    name="buffer_size")]
        variant = g.create_op("TextLineDataset", inputs,
                              dataset_attrs(dtypes.string, TensorShape([])),
                              name="TextLineDataset").outputs[0]
        super().__init__(variant, dtypes.string, TensorShape([]))
