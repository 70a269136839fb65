"""Execution plans: prune a placed graph to what a run needs, and wire it for the executor.

A ``Plan`` is built once per (fetches, feeds, targets) and cached by the session. It holds:
- ``nodes``: ``PlanNode`` list in topological order; ops plus one ``_Transfer`` node per
  (tensor, destination device) for every cross-device edge (TF's Send/Recv pair);
- ``slots``: one value slot per tensor produced or fed; ``feed_slots`` and ``fetch_slots``;
- per node: its device, kernel, input slots (with a flag when a ref must be read), output
  slots, consumers, and its initial pending-input count (data and control inputs).
- ``uses``: how many reads each slot gets in a step, so values are freed (and memory
  returned to the device budget) as soon as their last consumer has run.

Invariants: a node's consumers come after it in ``nodes``; a value crosses devices only
through a transfer node; fed tensors' producers are pruned unless needed for another output.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from tfteach.devices.base import Device
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.registry import OpDef
from tfteach.runtime.program import compile_program, depth_first_order


class KernelContext:
    """What a kernel sees (``tfteach.framework.kernel.KernelContext``): its op, attrs,
    device, array module and the step's resources."""

    __slots__ = ("op", "attrs", "device", "xp", "resources")

    def __init__(self, op: Operation | None, device: Device) -> None:
        self.op = op
        self.attrs = op.attrs if op is not None else {}
        self.device = device
        self.xp = device.xp
        self.resources: Any = None

    @property
    def deadline(self) -> float | None:
        """The step's timeout in seconds where its resources carry one (a cluster step's
        view has ``timeout_s``), else None. The executor enforces it for waiting kernels."""
        return getattr(self.resources, "timeout_s", None)


@dataclass
class PlanNode:
    index: int
    name: str
    type: str
    device: Device
    kernel: Callable
    ctx: KernelContext
    in_slots: list
    deref: tuple | None
    out_slots: list
    op: Operation | None = None
    op_def: OpDef | None = None
    consumers: list = field(default_factory=list)
    pending: int = 0
    transfer: tuple | None = None   # (tensor name, src device, src op name) for transfers
    # The device whose worker thread runs the node: its own, except that a copy between
    # host devices runs on the sending device's thread, as a GPU's copy engine works beside
    # its compute (the receiver keeps computing while the sender copies).
    runner: Any = None

    def __post_init__(self) -> None:
        if self.runner is None:
            self.runner = self.device

    @property
    def is_async(self) -> bool:
        return bool(self.op_def and self.op_def.is_async)


@dataclass
class Plan:
    nodes: list
    n_slots: int
    feed_slots: dict          # Tensor -> slot
    fetch_slots: list         # slot per fetched tensor (None for ops)
    fetch_deref: list
    uses: list
    devices: list             # distinct devices, in first-use order
    slot_device: list         # device index of each slot's producer
    single_device: bool = False
    has_async: bool = False
    run_inline: bool = False  # the caller's thread may run it all (see ``_inline``)
    full: Any = None          # inline plans: the ``Program`` running every node
    fast: Any = None          # ... and the one with small constants and NoOps folded
    ready: list = field(default_factory=list)  # indices of nodes with no pending inputs
    uses_virtual_blas: bool = False
    uses_cpu_blas: bool = False
    slot_names: list = field(default_factory=list)
    has_flow: bool = False    # control flow (cond, while_loop), or a cluster step's
    #                           _Recv that may get a dead tensor: runs in ``frames``
    flow: Any = None          # ... with its ``frames.FlowInfo``, built on first run


def needed_ops(fetch_ops: list[Operation], fed: set[Tensor]) -> set[int]:
    """Ids of the ops a run must execute: reverse reachability, stopping at fed tensors."""
    need: set[int] = set()
    stack = list(fetch_ops)
    while stack:
        op = stack.pop()
        if op._id in need:
            continue
        need.add(op._id)
        for t in op.inputs:
            if t not in fed:
                stack.append(t.op)
        stack.extend(op.control_inputs)
    return need


def build_plan(ops: list[Operation], placement: dict, fetches: list[Tensor | None],
               targets: list[Operation], feeds: list[Tensor], resources: Any = None) -> Plan:
    """Wire the pruned graph: slots, transfers, consumers and pending counts.

    ``resources`` (the container kernels see as ``ctx.resources``) is bound to every node.
    """
    fed = set(feeds)
    roots = [t.op for t in fetches if t is not None and t not in fed] + list(targets)
    need = needed_ops(roots, fed)
    b = _Builder(placement)
    for t in feeds:
        b.slot_for(t, placement[t.op.name])
    for op in inputs_first(ops, need):
        b.add_op(op, fed)
    plan = b.finish(fetches, feeds)
    for node in plan.nodes:
        node.ctx.resources = resources
    return plan


def inputs_first(ops: list[Operation], need: set[int]) -> list[Operation]:
    """The needed ops in creation order, except that an op comes after inputs it got later
    (a loop gradient's history push, made after the loop's counter, is a control input of
    the counter's step); a loop's back edge (a ``NextIteration`` input) does not count."""
    placed: set[int] = set()
    order: list[Operation] = []
    for root in ops:
        if root._id not in need or root._id in placed:
            continue
        stack, opened = [(root, False)], set()
        while stack:
            op, ready = stack.pop()
            if op._id in placed:
                continue
            if ready:
                placed.add(op._id)
                order.append(op)
                continue
            if op._id in opened:
                continue
            opened.add(op._id)
            stack.append((op, True))
            stack.extend((d, False) for d in _dependencies(op)
                         if d._id in need and d._id not in placed)
    return order


def _dependencies(op: Operation) -> list[Operation]:
    data = [t.op for t in op.inputs if t.op.op_def.extra.get("flow") != "next"]
    return data + list(op.control_inputs)


class _Builder:
    def __init__(self, placement: dict) -> None:
        self.placement = placement
        self.nodes: list[PlanNode] = []
        self.slots: dict[Tensor, int] = {}
        self.slot_device: list[Device] = []
        self.slot_names: list[str] = []
        self.producer: dict[int, int] = {}       # slot -> node index
        self.transfers: dict[tuple, int] = {}    # (slot, dst device name) -> slot on dst
        self.op_node: dict[int, int] = {}        # op id -> node index
        self.uses: list[int] = []

    def slot_for(self, t: Tensor, device: Device) -> int:
        if t not in self.slots:
            self.slots[t] = len(self.slot_device)
            self.slot_device.append(device)
            self.slot_names.append(t.name)
            self.uses.append(0)
        return self.slots[t]

    def add_op(self, op: Operation, fed: set[Tensor]) -> None:
        dev = self.placement[op.name]
        for t in op.inputs:     # a loop's back edge: NextIteration comes after its Merge
            if t not in self.slots and t.op.op_def.extra.get("flow") == "next":
                self.slot_for(t, self.placement[t.op.name])
        in_slots, deref = [], []
        for i, t in enumerate(op.inputs):
            ref_in = i in op.op_def.ref_inputs
            in_slots.append(self._input_slot(t, dev, ref_in))
            deref.append(t.is_ref and not ref_in)
        node = PlanNode(len(self.nodes), op.name, op.type, dev, dev.kernel_for(op.op_def.kernel),
                        KernelContext(op, dev), in_slots, tuple(deref) if any(deref) else None,
                        [self.slot_for(t, dev) if t not in fed else -1 for t in op.outputs],
                        op=op, op_def=op.op_def)
        self._add_node(node, [self.op_node[c._id] for c in op.control_inputs
                              if c._id in self.op_node])
        self.op_node[op._id] = node.index

    def _input_slot(self, t: Tensor, dev: Device, ref_in: bool) -> int:
        src = self.slots[t]
        src_dev = self.slot_device[src]
        if src_dev is dev or ref_in:
            self.uses[src] += 1
            return src
        key = (src, dev.name)
        if key not in self.transfers:
            self.transfers[key] = self._add_transfer(t, src, src_dev, dev)
        dst = self.transfers[key]
        self.uses[dst] += 1
        return dst

    def _add_transfer(self, t: Tensor, src: int, src_dev: Device, dev: Device) -> int:
        self.uses[src] += 1
        out = len(self.slot_device)
        self.slot_device.append(dev)
        self.slot_names.append(f"{t.name}->{dev.short_name}")
        self.uses.append(0)
        node = PlanNode(len(self.nodes), f"_recv_{t.op.name}_{t.value_index}_{dev.short_name}",
                        "_Transfer", dev, _transfer_kernel, KernelContext(None, dev), [src],
                        (True,) if t.is_ref else None, [out], transfer=(t.name, src_dev, t.op.name),
                        runner=dev if dev.is_gpu or src_dev.is_gpu else src_dev)
        node.ctx.attrs = {"src": src_dev}
        self._add_node(node, [])
        return out

    def _add_node(self, node: PlanNode, control: list[int]) -> None:
        preds = {self.producer[s] for s in node.in_slots if s in self.producer} | set(control)
        for p in preds:
            self.nodes[p].consumers.append(node.index)
        node.pending = len(preds)
        for s in node.out_slots:
            if s >= 0:
                self.producer[s] = node.index
        self.nodes.append(node)

    def finish(self, fetches: list[Tensor | None], feeds: list[Tensor]) -> Plan:
        fetch_slots = []
        for t in fetches:
            fetch_slots.append(None if t is None else self.slots[t])
            if t is not None:
                self.uses[self.slots[t]] += 1
        devices: list[Device] = []
        for n in self.nodes:
            if n.device not in devices:
                devices.append(n.device)
        has_async = any(n.is_async for n in self.nodes)
        has_flow = any(n.op_def is not None and ("flow" in n.op_def.extra or
                                                 n.op.attrs.get("may_be_dead"))
                       for n in self.nodes)
        plan = Plan(self.nodes, len(self.slot_device), {t: self.slots[t] for t in feeds},
                    fetch_slots, [t is not None and t.is_ref for t in fetches], self.uses,
                    devices, self.slot_device, single_device=len(devices) <= 1,
                    has_async=has_async,
                    run_inline=not has_async and not has_flow and _inline(self.nodes, devices),
                    uses_virtual_blas=_expensive_on(self.nodes, lambda d: d.blas_threads == 1),
                    uses_cpu_blas=_expensive_on(self.nodes, lambda d: d.device_type == "CPU"),
                    slot_names=self.slot_names, has_flow=has_flow,
                    ready=[n.index for n in self.nodes if n.pending == 0])
        if plan.run_inline:
            order = depth_first_order(plan)
            plan.full = compile_program(plan, order, fold=False)
            plan.fast = compile_program(plan, order, fold=True)
        return plan


def _inline(nodes: list, devices: list) -> bool:
    """Whether one thread can run the whole plan without changing what it computes or how
    long it takes: one device, or host devices only (CPU, virtual GPUs) where every
    expensive kernel is on the same device. Then nothing could overlap anyway (cheap
    kernels are microseconds), and skipping the worker threads' queue hops is the win.
    Real GPUs keep their own threads (each binds its stream there)."""
    if len(devices) <= 1:
        return True
    if any(d.is_gpu for d in devices):
        return False
    return len({n.device.name for n in nodes
                if n.op_def is not None and not n.op_def.cheap}) <= 1


def _expensive_on(nodes: list, which: Callable) -> bool:
    return any(n.op_def is not None and not n.op_def.cheap and which(n.device) for n in nodes)


def _transfer_kernel(ctx: KernelContext, value: Any) -> Any:
    return ctx.device.copy_from(value, ctx.attrs["src"])
