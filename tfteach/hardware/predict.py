"""``predict``: how long a step would take on a profiled machine, without running it.

1. Devices: one CPU and the profile's GPUs per task, built from the profile (not this
   machine's), named as TF names them (``/job:localhost/replica:0/task:0/device:GPU:1``).
   Tasks are the ``job``/``task`` pairs the graph's device requests name and the session's
   own ``task`` (none: one local task; ops with no job go to ``task``, else to the first
   worker); they take the profile's hosts in turn, sorted by name, unless ``task_hosts`` says.
   Hosts are alike, so an index past the profile's ``hosts`` is one more host of the same
   kind (each task a host of its own, as ``LocalCluster(network=...)`` models a cluster).
2. Place and prune with tfteach's own placer and plan builder (``runtime.placer``,
   ``runtime.plan``), exactly as a session would: every cross-device edge is a transfer.
3. Shapes from the graph, the feeds' shapes and folded shape arithmetic (``shapes``); no
   kernel of the step runs, so predicting has no side effects and reads no clock.
4. Costs: an op ``launch + max(FLOPs / peak, bytes / bandwidth)`` on its device (``costs``);
   a transfer ``latency + bytes / bandwidth`` on its link; on GPUs in their own memory, a fed
   tensor crosses the host link first and a fetched one crosses it back.
5. Schedule (``schedule``): one queue per device and one per link end; the step starts after
   the profile's ``step_overhead_s``.

The ``Estimate`` has the step time, each device's busy time, each link's bytes and time, and
``run_metadata``: a ``RunMetadata`` whose step stats are in modelled time (microseconds from
0), so timeline views draw it; ``run_metadata.modelled_on`` names the profile.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfteach.devices.base import CPUDevice, Device, VirtualGPUDevice
from tfteach.framework import graph as graph_mod
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.graph import Graph, Tensor
from tfteach.hardware import profiles, schedule
from tfteach.hardware.costs import op_work
from tfteach.hardware.profiles import LinkProfile, MachineProfile
from tfteach.hardware.shapes import Shapes, itemsize, refine
from tfteach.i18n import tr
from tfteach.runtime import placer
from tfteach.runtime.plan import Plan, build_plan
from tfteach.runtime.session import _flatten_fetches, _resolve_feeds
from tfteach.runtime.session_config import NodeExecStats, RunMetadata, StepStats, TransferStats
from tfteach.runtime.step_trace import short_device


@dataclass
class Estimate:
    """A modelled step: times in seconds, bytes per link, step stats in modelled time."""

    profile: str
    step_time_s: float
    device_busy_s: dict = field(default_factory=dict)     # device name -> seconds
    link_bytes: dict = field(default_factory=dict)        # link label -> bytes
    link_time_s: dict = field(default_factory=dict)       # link label -> seconds busy
    run_metadata: Any = None
    unknown_shapes: list = field(default_factory=list)    # tensors whose dims counted as 1
    modelled: bool = True

    def text(self) -> str:
        lines = [tr("modelled on {profile}: step {step_us} us", profile=self.profile,
                    step_us=f"{self.step_time_s * 1e6:.1f}")]
        lines += [f"  {short_device(d):>12s} busy {t * 1e6:10.1f} us"
                  for d, t in sorted(self.device_busy_s.items())]
        lines += [f"  {k}: {self.link_bytes[k]} bytes, {self.link_time_s[k] * 1e6:.1f} us"
                  for k in sorted(self.link_bytes)]
        return "\n".join(lines)


def predict(fetches: Any, feed_dict: dict | None = None, profile: Any = "H200",
            graph: Graph | None = None, allow_soft_placement: bool = False,
            task_hosts: dict | None = None, task: str | None = None) -> Estimate:
    """Model one ``Session.run(fetches, feed_dict)`` of ``graph`` on ``profile`` (a shipped
    profile's name, a profile file, or a ``MachineProfile``). ``task`` is the session's own
    task (``"/job:worker/task:0"``), where ops with no job go; ``task_hosts`` maps
    ``"job:task"`` to a host index (0, 1, ...; past the profile's ``hosts``, more hosts
    like them)."""
    prof = profiles.get(profile)
    graph = graph or graph_mod.get_default_graph()
    flat, _ = _flatten_fetches(fetches, graph)
    feeds = _resolve_feeds(feed_dict or {}, graph)
    own = DeviceSpec.from_string(task) if task else None
    tasks = _tasks(graph, None if own is None else (own.job, own.task or 0))
    hosts = {t: (task_hosts or {}).get(f"{t[0]}:{t[1]}", i % prof.hosts)
             for i, t in enumerate(tasks)}
    devices = [d for t in tasks for d in _devices(prof, *t)]
    placement = placer.place(graph.get_operations(), devices, allow_soft_placement, {},
                             DeviceSpec(own.job, 0, own.task or 0) if own else
                             _default_task(tasks))
    plan = build_plan(graph._ops, placement.devices,
                      [f if isinstance(f, Tensor) else None for f in flat],
                      [f for f in flat if not isinstance(f, Tensor)], list(feeds))
    shapes = refine([n.op for n in plan.nodes if n.op is not None], feeds)
    return _Model(prof, plan, shapes, hosts).estimate()


def _tasks(graph: Graph, own: tuple | None) -> list[tuple[str, int]]:
    """The (job, task) pairs the graph's device requests name, and the session's own task;
    one local task if none."""
    found = {own} if own else set()
    for op in graph.get_operations():
        spec = DeviceSpec.from_string(op.device)
        if spec.job is not None:
            found.add((spec.job, spec.task or 0))
    return sorted(found) or [("localhost", 0)]


def _default_task(tasks: list[tuple[str, int]]) -> DeviceSpec:
    """Where ops with no job go: the first worker's task (a between-graph program's own
    task), else the first task."""
    job, task = next((t for t in tasks if t[0] == "worker"), tasks[0])
    return DeviceSpec(job, 0, task)


def _devices(prof: MachineProfile, job: str, task: int) -> list[Device]:
    gpus = [VirtualGPUDevice(DeviceSpec(job, 0, task, "GPU", i), f"modelled {prof.gpu.name}",
                             prof.gpu.memory_bytes) for i in range(prof.gpus_per_host)
            ] if prof.gpu is not None else []
    return gpus + [CPUDevice(DeviceSpec(job, 0, task, "CPU", 0), f"modelled {prof.cpu.name}",
                             prof.cpu.memory_bytes)]


class _Model:
    """Items for the schedule from a plan, then the Estimate from their times."""

    def __init__(self, prof: MachineProfile, plan: Plan, shapes: Shapes, hosts: dict) -> None:
        self.prof, self.plan, self.shapes, self.hosts = prof, plan, shapes, hosts
        self.items: list[schedule.Item] = []
        self.slot_tensor = {s: t for t, s in plan.feed_slots.items()}
        for node in plan.nodes:
            if node.op is not None:
                self.slot_tensor.update({s: t for s, t in zip(node.out_slots, node.op.outputs,
                                                              strict=True) if s >= 0})

    def estimate(self) -> Estimate:
        node_item = self._add_nodes()
        self._add_feeds(node_item)
        self._add_fetches(node_item)
        start, end = schedule.run(self.items, self.prof.step_overhead_s)
        return self._report(start, end)

    def _add_nodes(self) -> dict[int, int]:
        preds: dict[int, list[int]] = {n.index: [] for n in self.plan.nodes}
        for n in self.plan.nodes:
            for c in n.consumers:
                preds[c].append(n.index)
        node_item = {}
        for n in self.plan.nodes:
            item = self._transfer_item(n) if n.transfer is not None else self._op_item(n)
            item.preds = [node_item[p] for p in preds[n.index]]
            node_item[n.index] = item.index
            self.items.append(item)
        return node_item

    def _op_item(self, node: Any) -> schedule.Item:
        op, dev = node.op, self.prof.device(node.device.device_type)
        args = [(self.shapes.concrete(t), itemsize(t)) for t in op.inputs]
        outs = [(self.shapes.concrete(t), itemsize(t)) for t in op.outputs]
        work = op_work(op.type, op.attrs, args, outs)
        fixed = dev.op_launch_s.get(op.type, dev.idle_op_s if work.kind == "idle" else
                                    dev.launch_s)
        dtype = (op.outputs or op.inputs or [None])[0]
        peak = dev.peak(dtype.dtype.name if dtype is not None else "", work.kind == "matrix")
        compute = max(work.flops / peak, work.nbytes / dev.bandwidth(work.nbytes))
        label = f"{op.name} = {op.type}({', '.join(t.op.name for t in op.inputs)})"
        out_bytes = sum(itemsize(t) * _count(o[0]) for t, o in zip(op.outputs, outs,
                                                                      strict=True))
        return schedule.Item(len(self.items), op.name, fixed + compute, (node.device.name,),
                             info={"device": node.device.name, "op": op.type, "label": label,
                                   "bytes": out_bytes})

    def _transfer_item(self, node: Any) -> schedule.Item:
        tensor, src, src_op = node.transfer
        nbytes = self.shapes.nbytes(self.slot_tensor[node.in_slots[0]])
        return self._link_item(node.name, src, node.device, nbytes,
                               {"tensor": tensor, "src_op": src_op, "dst_op": node.name})

    def _link_item(self, name: str, src: Device, dst: Device, nbytes: int,
                   info: dict) -> schedule.Item:
        link, ends = self._link(src, dst)
        label = f"{short_device(src.name)} -> {short_device(dst.name)} ({link.name})"
        return schedule.Item(len(self.items), name, link.time(nbytes), ends,
                             info={**info, "src": src.name, "dst": dst.name, "bytes": nbytes,
                                   "link": label})

    def _link(self, src: Device, dst: Device) -> tuple[LinkProfile, tuple]:
        """The link between two devices and the queues a copy over it holds: each end's
        port (a host's network card, a GPU's own PCIe or NVLink lanes)."""
        a, b = (src.spec.job, src.spec.task), (dst.spec.job, dst.spec.task)
        if a != b:
            if self.hosts[a] != self.hosts[b]:
                return self.prof.network, ((f"host {self.hosts[a]}", "net", "out"),
                                           (f"host {self.hosts[b]}", "net", "in"))
            return self.prof.loopback, ((a, "loop", "out"), (b, "loop", "in"))
        gpus = [d.name for d in (src, dst) if d.device_type == "GPU"]
        if len(gpus) == 2:
            kind = "pcie" if self.prof.gpu_link_via_host else "gpu link"
            return self.prof.gpu_link, ((src.name, kind, "out"), (dst.name, kind, "in"))
        if gpus:       # a GPU's own PCIe lanes, to or from its host
            return self.prof.host_link, ((gpus[0], "pcie", "out" if src.name in gpus else "in"),)
        return self.prof.host_link, ((src.name, "memory", "out"), (dst.name, "memory", "in"))

    @staticmethod
    def _host_of(dev: Device) -> Device:
        """The CPU of ``dev``'s task (the client's end of feeds and fetches)."""
        return CPUDevice(dev.spec.replace(device_type="CPU", device_index=0), "", 0)

    def _add_feeds(self, node_item: dict) -> None:
        """On GPUs with their own memory a fed value crosses the host link first."""
        if self.prof.shares_host_memory:
            return
        for t, slot in self.plan.feed_slots.items():
            dev = self.plan.slot_device[slot]
            if dev.device_type != "GPU":
                continue
            item = self._link_item(f"feed {t.name}", self._host_of(dev), dev,
                                   self.shapes.nbytes(t), {"tensor": t.name, "src_op": "",
                                                           "dst_op": t.op.name})
            self.items.append(item)
            for n in self.plan.nodes:
                if slot in n.in_slots:
                    self.items[node_item[n.index]].preds.append(item.index)

    def _add_fetches(self, node_item: dict) -> None:
        """... and a fetched value crosses it back to the client."""
        if self.prof.shares_host_memory:
            return
        producer = {s: n.index for n in self.plan.nodes for s in n.out_slots if s >= 0}
        for slot in dict.fromkeys(s for s in self.plan.fetch_slots if s is not None):
            dev = self.plan.slot_device[slot]
            if dev.device_type != "GPU" or slot not in producer:
                continue
            t = self.slot_tensor[slot]
            item = self._link_item(f"fetch {t.name}", dev, self._host_of(dev),
                                   self.shapes.nbytes(t), {"tensor": t.name,
                                                           "src_op": t.op.name,
                                                           "dst_op": f"_retval_{t.op.name}"})
            item.preds = [node_item[producer[slot]]]
            self.items.append(item)

    def _report(self, start: list[float], end: list[float]) -> Estimate:
        est = Estimate(self.prof.name, max(end, default=self.prof.step_overhead_s),
                       unknown_shapes=list(self.shapes.unknown))
        stats = StepStats()
        for it in self.items:
            s_us, e_us = round(start[it.index] * 1e6), round(end[it.index] * 1e6)
            dur_us = max(1, e_us - s_us)
            info = it.info
            if "link" in info:
                est.link_bytes[info["link"]] = est.link_bytes.get(info["link"], 0) + info["bytes"]
                est.link_time_s[info["link"]] = est.link_time_s.get(info["link"], 0.0) + \
                    it.duration
                stats.transfers.append(TransferStats(info["tensor"], info["src"], info["dst"],
                                                     info["src_op"], info["dst_op"], s_us,
                                                     dur_us, info["bytes"]))
                continue
            est.device_busy_s[info["device"]] = est.device_busy_s.get(info["device"], 0.0) + \
                it.duration
            stats.device_stats(info["device"]).node_stats.append(NodeExecStats(
                it.name, info["op"], s_us, dur_us, info["bytes"], 0, info["label"], dur_us))
        meta = RunMetadata()
        meta.step_stats = stats
        meta.placement = {n.name: n.device.name for n in self.plan.nodes if n.op is not None}
        meta.modelled_on = self.prof.name
        est.run_metadata = meta
        return est


def _count(dims: tuple) -> int:
    n = 1
    for d in dims:
        n *= d
    return n
