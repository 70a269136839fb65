"""Step stats as pictures' data: Chrome trace JSON (Perfetto) and tfteach's timeline JSON.

``Timeline(step_stats).generate_chrome_trace_format()`` matches TF's
``tensorflow.python.client.timeline``: a ``process_name`` metadata event per device, one
``X`` event per op (``args.name``, ``args.op``), and for each transfer an ``X`` event on the
receiving device plus a flow arrow (``s``/``f``) from sender to receiver.

``Timeline.to_data()`` is the ``application/vnd.tfteach.timeline+json`` form the notebook and
JupyterLab renderers draw: times in microseconds from the step's first event.
"""
from __future__ import annotations

import json
from typing import Any

from tfteach.runtime.config import StepStats


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

    def _t0(self) -> int:
        starts = [n.all_start_micros for d in self.step_stats.dev_stats for n in d.node_stats]
        starts += [t.all_start_micros for t in self.step_stats.transfers]
        return min(starts) if starts else 0

    def generate_chrome_trace_format(self, show_dataflow: bool = True,
                                     show_memory: bool = False) -> str:
        devices = self._devices()
        pid = {d: i for i, d in enumerate(devices)}
        events: list[dict] = [{"name": "process_name", "ph": "M", "pid": pid[d], "tid": 0,
                               "args": {"name": d}} for d in devices]
        for ds in self.step_stats.dev_stats:
            for n in ds.node_stats:
                events.append({"name": n.op, "ph": "X", "cat": "Op", "pid": pid[ds.device],
                               "tid": 0, "ts": n.all_start_micros, "dur": n.all_end_rel_micros,
                               "args": {"name": n.node_name, "op": n.op,
                                        "bytes": n.output_bytes}})
        for i, t in enumerate(self.step_stats.transfers):
            events.append({"name": "Transfer", "ph": "X", "cat": "Transfer",
                           "pid": pid[t.dst_device], "tid": 1, "ts": t.all_start_micros,
                           "dur": t.all_end_rel_micros,
                           "args": {"name": t.dst_op, "op": "_Recv", "tensor": t.tensor_name,
                                    "from": t.src_device, "bytes": t.bytes}})
            if show_dataflow:
                events.append({"name": t.tensor_name, "ph": "s", "cat": "DataFlow", "id": i,
                               "pid": pid[t.src_device], "tid": 0, "ts": t.all_start_micros})
                events.append({"name": t.tensor_name, "ph": "f", "bp": "e", "cat": "DataFlow",
                               "id": i, "pid": pid[t.dst_device], "tid": 1,
                               "ts": t.all_start_micros + t.all_end_rel_micros})
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
                              "end_us": s + t.all_end_rel_micros, "bytes": t.bytes})
            end = max(end, s + t.all_end_rel_micros)
        ops.sort(key=lambda o: (o["start_us"], o["name"]))
        return {"devices": [{"name": d, "short": short_device(d)} for d in self._devices()],
                "ops": ops, "transfers": transfers, "step_us": end}
