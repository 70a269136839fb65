"""``tf.summary``: event files for TensorBoard (``FileWriter``) and reading them back.

``FileWriter(logdir, graph)`` writes ``logdir/events.out.tfevents.<time>.<host>.<pid>.<n>``,
a TFRecord file (``tfteach.framework.record_io``) of ``Event`` protobufs, TF's format:

1. ``Event{wall_time, file_version: "brain.Event:2"}``
2. ``Event{wall_time, graph_def: <GraphDef bytes>}`` when a graph is given: TensorBoard's
   Graphs tab draws it. Each node's ``device`` is where tfteach placed it when a session
   is known (``session=``, the default session, or an open session of this graph), else the
   device it asked for, so "Color: Device" shows the placement. Shapes are attached
   (``_output_shapes``), so edges show tensor shapes.
3. ``Event{wall_time, step, summary}`` for each ``add_summary``, e.g.
   ``Summary(value=[Summary.Value(tag="loss", simple_value=0.25)])`` for a scalar curve.

Unlike TF, events are written and flushed at once (no queue, no thread): the file is
complete whenever TensorBoard reads it. ``summary_iterator(path)`` reads the events back.
The summary ops (``scalar``, ``histogram``, ``image``, ``text``, ``merge``, ``merge_all``)
come from ``tfteach.train.summaries``. Run metadata (``add_run_metadata``) is not supported.
"""
from __future__ import annotations

import itertools
import os
import socket
import time
from typing import Any, Iterator

from tfteach.errors import with_hint
from tfteach.i18n import tr
from tfteach.framework import graph_def as graph_def_lib
from tfteach.framework.graph import Graph
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb
from tfteach.framework.record_io import encode_record, read_records
from tfteach.runtime.session import get_default_session, local_sessions_of
from tfteach.train.summaries import histogram, image, merge, merge_all, scalar, text

Event = pb.Event
Summary = pb.Summary
SummaryMetadata = pb.SummaryMetadata
HistogramProto = pb.HistogramProto
FILE_VERSION = "brain.Event:2"
_SERIAL = itertools.count()

__all__ = ["Event", "FileWriter", "HistogramProto", "Summary", "SummaryMetadata", "histogram",
           "image", "merge", "merge_all", "scalar", "summary_iterator", "text"]


def _placed_devices(graph: Graph, session: Any) -> dict[str, str]:
    """Op name -> device where ``session`` (or the default session, or the newest open
    local session of ``graph``) placed the ops of ``graph``; empty when none is known."""
    candidates = [session, get_default_session(), *reversed(local_sessions_of(graph))]
    session = next((s for s in candidates if getattr(s, "graph", None) is graph and
                    hasattr(s, "placement")), None)
    if session is None:
        return {}
    try:
        return {name: device.name for name, device in session.placement().devices.items()}
    except Exception:  # noqa: BLE001 (a graph that cannot be placed keeps its requests)
        return {}


class FileWriter:
    """Writes an event file for TensorBoard (TF 1.x ``tf.summary.FileWriter``)."""

    def __init__(self, logdir: str, graph: Graph | None = None, max_queue: int = 10,
                 flush_secs: float = 120, graph_def: Any = None,
                 filename_suffix: str | None = None, session: Any = None) -> None:
        self._logdir = os.fspath(logdir)
        self._suffix = filename_suffix or ""
        self._session = session
        self._file = None
        self.reopen()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    def get_logdir(self) -> str:
        return self._logdir

    @property
    def path(self) -> str:
        """The event file's path."""
        return self._path

    def reopen(self) -> None:
        """Start a new event file (after ``close``); does nothing while one is open."""
        if self._file is not None:
            return
        os.makedirs(self._logdir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}."
                f"{os.getpid()}.{next(_SERIAL)}{self._suffix}")
        self._path = os.path.join(self._logdir, name)
        self._file = open(self._path, "ab")
        self.add_event(Event(wall_time=time.time(), file_version=FILE_VERSION))

    def add_event(self, event: Any) -> None:
        """Append one ``Event`` (ours or TF's message) and flush it to disk."""
        if self._file is None:
            raise RuntimeError(with_hint("FileWriter is closed.",
                                         tr("call reopen() first, or make a new FileWriter.")))
        data = event.SerializeToString()
        self._file.write(encode_record(data))
        self._file.flush()

    def add_graph(self, graph: Graph | None, global_step: int | None = None,
                  graph_def: Any = None) -> None:
        """Write a graph for TensorBoard's Graphs tab (with placed devices and shapes)."""
        if graph is not None and graph_def is not None:
            raise ValueError("Please pass only graph, or graph_def (deprecated), but not both.")
        if graph is not None:
            devices = _placed_devices(graph, self._session)
            proto = graph_def_lib.as_graph_def(graph, devices=devices, add_shapes=True)
        elif graph_def is not None:
            proto = graph_def_lib.as_graph_def_proto(graph_def)
        else:
            raise TypeError("add_graph needs a graph (or a graph_def).")
        self._add(Event(graph_def=proto.SerializeToString()), global_step)

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """Write a ``Summary`` (ours, TF's, or its serialized bytes) at ``global_step``."""
        if isinstance(summary, (bytes, bytearray)):
            summary = Summary.FromString(bytes(summary))
        elif not isinstance(summary, Summary):
            summary = Summary.FromString(summary.SerializeToString())
        self._add(Event(summary=summary), global_step)

    def _add(self, event: pb.Event, global_step: int | None) -> None:
        event.wall_time = time.time()
        if global_step is not None:
            event.step = int(global_step)
        self.add_event(event)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def summary_iterator(path: str) -> Iterator[pb.Event]:
    """The ``Event`` protobufs of an event file, in order (TF's
    ``tf.compat.v1.train.summary_iterator``)."""
    with open(path, "rb") as f:
        for record in read_records(f, path):
            yield Event.FromString(record)
