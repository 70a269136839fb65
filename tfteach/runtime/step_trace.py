"""Step stats as pictures' data: Chrome trace JSON (Perfetto) and tfteach's timeline JSON.

``Timeline(step_stats).generate_chrome_trace_format()`` matches TF's
``tensorflow.python.client.timeline``: a ``process_name`` metadata event per device, one
``X`` event per op (``args.name``, ``args.op``) and per transfer (on the receiving device, as
TF's ``_Recv``), each on a lane (``tid``) of its device chosen as TF does so that no two slices
of a thread overlap. Flow arrows follow TF's convention, which Perfetto keeps only when every
flow event lies inside a slice of its own thread: a flow starts (``s``) inside the producer's
op slice (its last microsecond) and steps (``t``) into the transfer slice (its first); a second
flow starts inside the transfer slice and steps into each consumer's op slice on the
receiving device (consumers read from the ops' ``timeline_label`` inputs).
``show_memory=True`` adds TF's memory counters: an ``Allocators`` process with one ``C``
series per allocator (``cpu``, ``GPU_0_bfc``) of the bytes of live tensors.

``Timeline.to_data()`` is the ``application/vnd.tfteach.timeline+json`` form the notebook and
JupyterLab renderers draw: times in microseconds from the step's first event; each transfer
names its producer (``src_op``) and the ops that read it on the receiving device
(``consumers``), so arrows can start at the producer's bar and end in the consumers'.
"""
from __future__ import annotations

import json
from typing import Any

from tfteach.runtime.session_config import StepStats


def short_device(name: str) -> str:
    """``/job:localhost/replica:0/task:0/device:GPU:0`` -> ``GPU:0`` (job/task kept if not local)."""
    parts = dict(p.split(":", 1) for p in name.strip("/").split("/") if ":" in p)
    dev = parts.get("device", name)
    job, task = parts.get("job"), parts.get("task")
    return dev if job in (None, "localhost") else f"{job}:{task}/{dev}"


class Timeline:
    """Converts ``RunMetadata.step_stats`` to trace formats."""

    def __init__(self, step_stats: StepStats, graph: Any = None) -> None:
        self.step_stats = step_stats

    def _devices(self) -> list[str]:
        names = [d.device for d in self.step_stats.dev_stats]
        for t in self.step_stats.transfers:
            for n in (t.src_device, t.dst_device):
                if n not in names:
                    names.append(n)
        return sorted(names)

    def _consumers(self, t: Any) -> list[str]:
        """Ops on a transfer's receiving device that read it (by producer or _Recv name)."""
        return [n.node_name for ds in self.step_stats.dev_stats if ds.device == t.dst_device
                for n in ds.node_stats
                if {t.src_op, t.dst_op} & set(_label_inputs(n.timeline_label)) - {""}]

    def _t0(self) -> int:
        starts = [n.all_start_micros for d in self.step_stats.dev_stats for n in d.node_stats]
        starts += [t.all_start_micros for t in self.step_stats.transfers]
        return min(starts) if starts else 0

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False) -> str:
        """The step as Chrome trace JSON (TF's ``Timeline.generate_chrome_trace_format``)."""
        devices = self._devices()
        pid = {d: i for i, d in enumerate(devices)}
        events: list[dict] = [{"name": "process_name", "ph": "M", "pid": pid[d], "tid": 0,
                               "args": {"name": d}} for d in devices]
        slices = _slices(self.step_stats)
        events += [s.event(pid) for s in slices]
        if show_dataflow:
            events += _flows(self.step_stats, slices, pid)
        if show_memory:
            events += _memory_counters(slices, len(devices))
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"})

    def to_data(self) -> dict:
        """The ``application/vnd.tfteach.timeline+json`` payload."""
        t0 = self._t0()
        ops, transfers, end = [], [], 0
        for ds in self.step_stats.dev_stats:
            for n in ds.node_stats:
                s = n.all_start_micros - t0
                ops.append({"name": n.node_name, "op": n.op, "device": ds.device,
                            "start_us": s, "end_us": s + n.all_end_rel_micros,
                            "bytes": n.output_bytes})
                end = max(end, s + n.all_end_rel_micros)
        for t in self.step_stats.transfers:
            s = t.all_start_micros - t0
            transfers.append({"src_device": t.src_device, "dst_device": t.dst_device,
                              "tensor": t.tensor_name, "start_us": s,
                              "end_us": s + t.all_end_rel_micros, "bytes": t.bytes,
                              "src_op": t.src_op, "consumers": self._consumers(t)})
            end = max(end, s + t.all_end_rel_micros)
        ops.sort(key=lambda o: (o["start_us"], o["name"]))
        return {"devices": [{"name": d, "short": short_device(d)} for d in self._devices()],
                "ops": ops, "transfers": transfers, "step_us": end}


# ---- Chrome trace pieces ------------------------------------------------------------------------
class _Slice:
    """One ``X`` event: an op, or a transfer on its receiving device; ``tid`` is its lane."""

    def __init__(self, device: str, start: int, dur: int, cat: str, name: str, args: dict,
                 inputs: tuple[str, ...] = (), nbytes: int = 0) -> None:
        self.device, self.start, self.dur = device, start, max(1, dur)
        self.cat, self.name, self.args = cat, name, args
        self.inputs, self.nbytes, self.tid = inputs, nbytes, 0

    @property
    def end(self) -> int:
        return self.start + self.dur

    def inside(self, at_end: bool) -> float:
        """A time strictly inside the slice, half a microsecond from its end (a flow's start)
        or its start (a flow's end): where TF puts them, but not on the edge, where Perfetto
        may bind the event to no slice or to the neighbouring one."""
        return self.end - 0.5 if at_end else self.start + 0.5

    def event(self, pid: dict) -> dict:
        return {"name": self.name, "ph": "X", "cat": self.cat, "pid": pid[self.device],
                "tid": self.tid, "ts": self.start, "dur": self.dur, "args": self.args}


def _label_inputs(label: str) -> tuple[str, ...]:
    """Input op names of a ``name = Type(a, b:1, ^c)`` timeline label."""
    inside = label.partition("(")[2].rpartition(")")[0]
    return tuple(i.strip().lstrip("^").split(":")[0] for i in inside.split(",") if i.strip())


def _slices(stats: StepStats) -> list[_Slice]:
    """Every op and transfer as a slice, in lanes that never overlap on one device."""
    out = [_Slice(ds.device, n.all_start_micros, n.all_end_rel_micros, "Op", n.op,
                  {"name": n.node_name, "op": n.op, "bytes": n.output_bytes},
                  _label_inputs(n.timeline_label), n.output_bytes)
           for ds in stats.dev_stats for n in ds.node_stats]
    out += [_Slice(t.dst_device, t.all_start_micros, t.all_end_rel_micros, "Transfer",
                   "Transfer", {"name": t.dst_op, "op": "_Recv", "tensor": t.tensor_name,
                                "from": t.src_device, "bytes": t.bytes}, (t.src_op,), t.bytes)
            for t in stats.transfers]
    _assign_lanes(out)
    return out


def _assign_lanes(slices: list[_Slice]) -> None:
    """TF's lane rule: a slice goes on the first lane of its device that is free before it
    starts, so slices on one thread never overlap (Perfetto drops improperly nested ones)."""
    lanes: dict[str, list[int]] = {}
    for s in sorted(slices, key=lambda s: (s.start, s.end)):
        ends = lanes.setdefault(s.device, [])
        s.tid = next((i for i, end in enumerate(ends) if s.start > end), len(ends))
        if s.tid == len(ends):
            ends.append(s.end)
        else:
            ends[s.tid] = s.end


def _flows(stats: StepStats, slices: list[_Slice], pid: dict) -> list[dict]:
    """For each transfer, an arrow from the producer's op slice into the transfer slice and
    one from the transfer slice into each consumer's op slice on the receiving device.

    TF's convention: ``s`` inside the producer at its end, ``t`` inside the consumer at its
    start, on the slices' own threads."""
    ops = {(s.device, s.args["name"]): s for s in slices if s.cat == "Op"}
    transfers = [s for s in slices if s.cat == "Transfer"]
    events: list[dict] = []
    for t, stat in zip(transfers, stats.transfers, strict=True):
        producer = ops.get((stat.src_device, stat.src_op))
        if producer is not None:
            events += _arrow(len(events) // 2, stat.tensor_name, producer, t, pid)
        for consumer in slices:
            if consumer.cat == "Op" and consumer.device == t.device and \
                    (stat.src_op in consumer.inputs or stat.dst_op in consumer.inputs):
                events += _arrow(len(events) // 2, stat.tensor_name, t, consumer, pid)
    return events


def _arrow(flow_id: int, name: str, src: _Slice, dst: _Slice, pid: dict) -> list[dict]:
    base = {"name": name, "cat": "DataFlow", "id": flow_id}
    return [{**base, "ph": "s", "pid": pid[src.device], "tid": src.tid, "ts": src.inside(True)},
            {**base, "ph": "t", "pid": pid[dst.device], "tid": dst.tid,
             "ts": dst.inside(False)}]


def allocator_name(device: str) -> str:
    """TF's allocator names: ``cpu``, ``GPU_0_bfc`` (with ``job:task/`` for other tasks)."""
    short = short_device(device)
    prefix, _, dev = short.rpartition("/")
    kind, _, index = dev.partition(":")
    name = f"GPU_{index}_bfc" if kind.upper() == "GPU" else kind.lower()
    return f"{prefix}/{name}" if prefix else name


def _memory_counters(slices: list[_Slice], pid: int) -> list[dict]:
    """TF's ``show_memory`` counters: an ``Allocators`` process with, per allocator, the bytes
    of live tensors over time (a tensor lives from its producer's start to its last reader's
    end on the same device)."""
    last_use: dict[tuple[str, str], int] = {}
    for s in slices:
        reader = s.args.get("from", s.device)
        for name in s.inputs:
            key = (reader, name)
            last_use[key] = max(last_use.get(key, 0), s.end - 1)
    changes: dict[str, list[tuple[int, int]]] = {}
    for s in slices:
        if s.nbytes <= 0:
            continue
        name = s.args["name"]
        freed = max(s.end, last_use.get((s.device, name), 0),
                    last_use.get((s.device, s.args.get("tensor", "").split(":")[0]), 0))
        changes.setdefault(allocator_name(s.device), []).extend(
            [(s.start, s.nbytes), (freed, -s.nbytes)])
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
               "args": {"name": "Allocators"}}]
    for allocator, deltas in sorted(changes.items()):
        total = 0
        for ts, delta in sorted(deltas):
            total += delta
            events.append({"name": allocator, "ph": "C", "cat": "Memory", "pid": pid, "tid": 0,
                           "ts": ts, "args": {allocator: total}})
    return events
