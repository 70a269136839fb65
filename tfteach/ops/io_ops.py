"""Readers (TF 1.x): ``tf.TextLineReader``, ``tf.FixedLengthRecordReader``, ``tf.WholeFileReader``.

A reader is a resource (``TextLineReaderV2``, ...) that reads records from files whose names
it dequeues from a queue (usually ``tf.train.string_input_producer``'s). ``ReaderReadV2``
gives one ``(key, value)`` pair of strings: the key names the file and the record
(``name:line`` for lines, counted from 1 with the header; ``name:index`` for fixed-length
records, from 0; the name for whole files).

State of a reader: ``records`` (an iterator over the open file's records, or None),
``files`` (names dequeued but not opened yet), ``waiting`` (Pendings of reads not served yet,
first come first served) and ``inner`` (the one dequeue in flight, if any). A read never
blocks a device thread: when the open file has no more records, the reader asks the queue
for the next name (a waiting dequeue) and serves its reads when the name comes. A closed,
empty queue ends every waiting read with its OutOfRangeError; a cancelled read takes nothing.
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Iterator

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.kernel import Pending
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.data_flow_ops import _HANDLE, _HANDLE_OP, _Attempt, _start_waiting, shared_resource

_STRING = (dtypes.string, TensorShape([]))


# ---- what a reader reads from one file ---------------------------------------------------------
def _text_lines(name: str, data: bytes, attrs: dict) -> Iterator[tuple]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if number > attrs.get("skip_header_lines", 0):
            yield f"{name}:{number}", line[:-1] if line.endswith(b"\r") else line


def _fixed_records(name: str, data: bytes, attrs: dict) -> Iterator[tuple]:
    size, header = attrs["record_bytes"], attrs.get("header_bytes", 0)
    end = len(data) - attrs.get("footer_bytes", 0)
    hop = attrs.get("hop_bytes", 0) or size
    index, start = 0, header
    while start + size <= end:
        yield f"{name}:{index}", data[start:start + size]
        index += 1
        start += hop


def _whole_file(name: str, data: bytes, attrs: dict) -> Iterator[tuple]:
    yield name, data


_RECORDS: dict[str, Callable] = {"TextLineReaderV2": _text_lines,
                                 "FixedLengthRecordReaderV2": _fixed_records,
                                 "WholeFileReaderV2": _whole_file}


# ---- the reader resource -------------------------------------------------------------------------
class ReaderResource:
    """One reader's state (see the module docstring)."""

    def __init__(self, name: str, records_of: Callable, attrs: dict) -> None:
        self.name = name
        self.records_of = records_of
        self.attrs = dict(attrs)
        self.lock = threading.Lock()
        self.records: Iterator[tuple] | None = None
        self.files: collections.deque = collections.deque()
        self.waiting: collections.deque = collections.deque()
        self.inner: Pending | None = None
        self.produced = 0

    def request(self, ctx: Any, queue: Any) -> Pending:
        """A read: its Pending resolves to ``(key, value)``."""
        outer = Pending()
        outer.on_cancel = lambda: self._drop(outer, errors.CancelledError(
            f"{ctx.op.name} was cancelled", hint=tr(
                "the step it belonged to failed or was interrupted; the reader keeps its "
                "place in the file for the next read.")))
        outer.on_deadline = lambda: self._drop(outer, errors.DeadlineExceededError(
            f"Timed out waiting in {ctx.op.name} for a file name from '{queue.name}'",
            hint=tr("is the queue of file names being filled (tf.train.start_queue_runners)?")))
        with self.lock:
            self.waiting.append(outer)
        self._serve(ctx, queue)
        return outer

    def _serve(self, ctx: Any, queue: Any) -> None:
        done, failed, ask = [], None, False
        with self.lock:
            while self.waiting:
                try:
                    record = self._next_record(ctx)
                except errors.OpError as e:
                    failed = (self.waiting.popleft(), e)
                    break
                if record is None:
                    break
                done.append((self.waiting.popleft(), record))
            if self.waiting and self.inner is None and failed is None:
                ask = True
                self.inner = Pending()
        for pending, (key, value) in done:
            pending.resolve((np.array(key.encode(), dtype=object),
                             np.array(value, dtype=object)))
        if failed is not None:
            failed[0].resolve(None, failed[1])
            self._serve(ctx, queue)
        elif ask:
            self._ask(ctx, queue)

    def _next_record(self, ctx: Any) -> tuple | None:
        """The next record (lock held): from the open file, or the next dequeued one."""
        while True:
            if self.records is not None:
                record = next(self.records, None)
                if record is not None:
                    self.produced += 1
                    return record
                self.records = None
            if not self.files:
                return None
            name = self.files.popleft()
            self.records = self.records_of(name, self._load(ctx, name), self.attrs)

    @staticmethod
    def _load(ctx: Any, name: str) -> bytes:
        try:
            with open(name, "rb") as f:
                return f.read()
        except OSError:
            raise errors.NotFoundError(f"{name}; No such file or directory", op=ctx.op,
                                       hint=tr("a file name in the reader's queue names no "
                                               "file; check the names given to "
                                               "string_input_producer.")) from None

    def _ask(self, ctx: Any, queue: Any) -> None:
        """Dequeue one file name; serve the waiting reads when it comes."""
        attempt = _Attempt(self.inner, 1, ctx.op.name)

        def got(value: Any, error: BaseException | None) -> None:
            with self.lock:
                self.inner = None
                failed = list(self.waiting) if error is not None else []
                if error is not None:
                    self.waiting.clear()
                else:
                    name = value[0] if isinstance(value, tuple) else value
                    name = np.asarray(name).item()
                    self.files.append(name.decode() if isinstance(name, bytes) else str(name))
            for pending in failed:
                pending.resolve(None, error)
            if error is None:
                self._serve(ctx, queue)
        self.inner.add_done_callback(got)
        _start_waiting(ctx, queue, attempt, queue.dequeuers)

    def _drop(self, outer: Pending, error: BaseException) -> None:
        with self.lock:
            if outer not in self.waiting:
                return
            self.waiting.remove(outer)
            inner = self.inner if not self.waiting else None
        outer.resolve(None, error)
        if inner is not None:
            inner.cancel()

    def release(self) -> None:
        with self.lock:
            waiting, self.waiting = list(self.waiting), collections.deque()
        for pending in waiting:
            pending.resolve(None, errors.CancelledError(f"Reader '{self.name}' was reset"))

    def read(self, op: Any = None) -> np.ndarray:
        """What fetching the handle gives: its name."""
        return np.array(self.name.encode(), dtype=object)


# ---- kernels and registration --------------------------------------------------------------------
def _reader_kernel(ctx: Any) -> ReaderResource:
    name = ctx.attrs["shared_name"] or ctx.op.name
    return shared_resource(ctx.resources, "reader", name, lambda: ReaderResource(
        name, _RECORDS[ctx.op.type], ctx.attrs), ctx.attrs["container"])


def _read_kernel(ctx: Any, reader: ReaderResource, queue: Any) -> Pending:
    return reader.request(ctx, queue)


def _produced_kernel(ctx: Any, reader: ReaderResource) -> np.ndarray:
    return np.array(reader.produced, dtype=np.int64)


for _type in _RECORDS:
    register_op(_type, lambda op: _HANDLE, _reader_kernel, **_HANDLE_OP)
register_op("ReaderReadV2", lambda op: [_STRING, _STRING], _read_kernel, is_async=True,
            gpu_types=frozenset(), stateful=True, ref_inputs=(0, 1))
register_op("ReaderNumRecordsProducedV2", lambda op: [(dtypes.int64, TensorShape([]))],
            _produced_kernel, gpu_types=frozenset(), stateful=True, ref_inputs=(0,))
not_differentiable("ReaderReadV2", "ReaderNumRecordsProducedV2", *_RECORDS)


# ---- the Python API ------------------------------------------------------------------------------
class ReaderBase:
    """What every reader offers: ``read(queue)`` -> ``(key, value)``."""

    def __init__(self, op_type: str, attrs: dict, name: str) -> None:
        g = get_default_graph()
        self._reader_ref = g.create_op(op_type, [], {**attrs, "container": "", "shared_name": ""},
                                       name=name).outputs[0]

    reader_ref = property(lambda self: self._reader_ref)
    supports_serialize = False

    def read(self, queue: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
        """The next record: ``(key, value)``, dequeuing a file name from ``queue`` when the
        open file has no more records."""
        queue_ref = getattr(queue, "queue_ref", queue)
        op = self._reader_ref.graph.create_op("ReaderReadV2", [self._reader_ref, queue_ref], {},
                                              name=name or "ReaderReadV2")
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name: str | None = None) -> Tensor:
        return self._reader_ref.graph.create_op(
            "ReaderNumRecordsProducedV2", [self._reader_ref], {},
            name=name or "ReaderNumRecordsProducedV2").outputs[0]


class TextLineReader(ReaderBase):
    """``tf.TextLineReader(skip_header_lines=None)``: one record per line, without its end."""

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        super().__init__("TextLineReaderV2", {"skip_header_lines": int(skip_header_lines or 0)},
                         name or "TextLineReaderV2")


class FixedLengthRecordReader(ReaderBase):
    """``tf.FixedLengthRecordReader(record_bytes, header_bytes=None, footer_bytes=None,
    hop_bytes=None)``: records of ``record_bytes`` bytes (CIFAR-10's binary files)."""

    def __init__(self, record_bytes: int, header_bytes: int | None = None,
                 footer_bytes: int | None = None, hop_bytes: int | None = None,
                 name: str | None = None, encoding: str | None = None) -> None:
        if encoding:
            raise NotImplementedError(errors.with_hint(
                "tfteach's FixedLengthRecordReader reads uncompressed files only.",
                tr("decompress the files first (gzip -d), or run this on real TensorFlow.")))
        super().__init__("FixedLengthRecordReaderV2", {
            "record_bytes": int(record_bytes), "header_bytes": int(header_bytes or 0),
            "footer_bytes": int(footer_bytes or 0), "hop_bytes": int(hop_bytes or 0)},
            name or "FixedLengthRecordReaderV2")


class WholeFileReader(ReaderBase):
    """``tf.WholeFileReader()``: one record per file, the whole file (key: its name)."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__("WholeFileReaderV2", {}, name or "WholeFileReaderV2")
