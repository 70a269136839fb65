"""The placer: assigns every op of a graph to one device, by TF 1.x's rules.

Steps (TF 1.x's placer, ``tensorflow/core/common_runtime/placer.cc``):
1. Colocation groups: union-find over ``_class`` (``loc:@x``) and ref-input edges. A group
   merges its members' requested specs; job/replica/task conflicts always fail, type/id
   conflicts fail unless soft placement is on (then the field is cleared).
2. Each group's kernel-supported device types are the intersection of its members'.
3. Candidates: devices matching the group's spec (ops with no job go to the session's own
   task), filtered by supported types, sorted GPU before CPU, then by name. With soft
   placement an empty set is retried with type and id cleared (never job/replica/task).
4. Pass 1 assigns non-generator groups in op order to their first candidate; pass 2 puts
   each generator (no inputs, one non-ref output, e.g. Const) on its consumers' device when
   they all agree (any task's, unless the generator asked for a job), else on its first
   candidate. Stateful ops keep the device they had in
   an earlier placement (``pinned``).

Output: ``Placement`` (op name -> Device, plus the log order). Errors are TF 1.5's
``InvalidArgumentError`` texts with a ``Hint:``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from tfteach.devices.base import Device
from tfteach.errors import InvalidArgumentError
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.graph import Operation
from tfteach.i18n import join, tr

_TYPE_PRIORITY = {"GPU": 210, "CPU": 60}


@dataclass
class Placement:
    devices: dict = field(default_factory=dict)   # op name -> Device
    order: list = field(default_factory=list)     # op names in TF's log order

    def log_lines(self) -> list[str]:
        return [f"{n}: ({self.types[n]}): {self.devices[n].name}" for n in self.order]

    types: dict = field(default_factory=dict)


class _Group:
    __slots__ = ("members", "spec", "types", "device", "requests")

    def __init__(self) -> None:
        self.members: list[Operation] = []
        self.spec = DeviceSpec()
        self.types: set[str] | None = None
        self.device: Device | None = None
        self.requests: list[str] = []


def place(ops: list[Operation], devices: list[Device], soft: bool = False,
          pinned: dict | None = None, default_task: DeviceSpec | None = None) -> Placement:
    """Place ``ops`` (a whole graph, in creation order) on ``devices``."""
    if not devices:
        raise InvalidArgumentError("No devices are registered",
                                   hint=tr("the session found no CPU or GPU; check "
                                           "device_count."))
    groups = _build_groups(ops, soft, pinned or {}, devices)
    placer = _Assigner(devices, soft, default_task or DeviceSpec())
    return placer.run(ops, groups)


# ---- groups ---------------------------------------------------------------------------------
def _build_groups(ops: list[Operation], soft: bool, pinned: dict,
                  devices: list[Device]) -> dict[str, _Group]:
    parent = {op.name: op.name for op in ops}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for op in ops:
        for other in op._colocation:
            if other in parent:
                parent[find(op.name)] = find(other)
        for i in op.op_def.ref_inputs:
            if i < len(op.inputs) and op.inputs[i].is_ref and op.inputs[i].op.name in parent:
                parent[find(op.name)] = find(op.inputs[i].op.name)
    by_root: dict[str, _Group] = {}
    of_op: dict[str, _Group] = {}
    by_name = {d.name: d for d in devices}
    for op in ops:
        g = by_root.setdefault(find(op.name), _Group())
        _join(g, op, soft, pinned, by_name)
        of_op[op.name] = g
    return of_op


def _join(g: _Group, op: Operation, soft: bool, pinned: dict, by_name: dict) -> None:
    g.members.append(op)
    types = set(op.op_def.supported_device_types(op))
    if g.types is not None and not (g.types & types) and len(g.members) > 1:
        raise _error(g.members[0], f"Cannot colocate nodes '{g.members[0].name}' and "
                     f"'{op.name}' because no device type supports both of those nodes and the "
                     "other nodes colocated with them.",
                     tr("a colocated group (a variable and the ops that update it) must share "
                        "a device type; use dtypes that the device supports."))
    g.types = types if g.types is None else g.types & types
    if op.name in pinned and pinned[op.name] in by_name:
        g.device = by_name[pinned[op.name]]
    if op.device and not _overridden_by_ref_source(op):
        g.requests.append(op.device)
        g.spec = _merge(g, op, DeviceSpec.from_string(op.device), soft)


def _overridden_by_ref_source(op: Operation) -> bool:
    """TF: a ref input's source spec wins over an incompatible request of the consumer."""
    mine = DeviceSpec.from_string(op.device)
    for i in op.op_def.ref_inputs:
        if i < len(op.inputs) and op.inputs[i].is_ref:
            source = _ref_owner(op.inputs[i].op)
            if source.device and not mine.compatible(DeviceSpec.from_string(source.device)):
                return True
    return False


def _ref_owner(op: Operation) -> Operation:
    """The op whose storage a ref output of ``op`` points at: back through the ops that
    pass a ref on (a loop's ``RefEnter``, a cond's ``RefSwitch``) to the variable."""
    seen = {op.name}
    while True:
        refs = [op.inputs[i] for i in op.op_def.ref_inputs
                if i < len(op.inputs) and op.inputs[i].is_ref]
        if not refs or refs[0].op.name in seen:
            return op
        op = refs[0].op
        seen.add(op.name)


def _merge(g: _Group, op: Operation, new: DeviceSpec, soft: bool) -> DeviceSpec:
    cur = g.spec
    for field_name, label in (("job", "jobs"), ("replica", "replicas"), ("task", "tasks")):
        a, b = getattr(cur, field_name), getattr(new, field_name)
        if a is not None and b is not None and a != b:
            raise _colocate_error(g, op, f"Cannot merge devices with incompatible {label}: "
                                  f"'{cur}' and '{new}'")
    merged = cur.merge_from(new)
    if cur.device_type and new.device_type and cur.device_type != new.device_type:
        if not soft:
            raise _colocate_error(g, op, f"Cannot merge devices with incompatible types: "
                                  f"'{cur}' and '{new}'")
        return merged.replace(device_type=None, device_index=None)
    if cur.device_index is not None and new.device_index is not None and \
            cur.device_index != new.device_index:
        if not soft:
            raise _colocate_error(g, op, f"Cannot merge devices with incompatible ids: "
                                  f"'{cur}' and '{new}'")
        return merged.replace(device_index=None)
    return merged


def _colocate_error(g: _Group, op: Operation, msg: str) -> InvalidArgumentError:
    first = g.members[0]
    return _error(first, f"Cannot colocate nodes '{op.name}' and '{first.name}: {msg}",
                  tr("ops colocated with each other (a variable, its Assign and read) must "
                     "ask for the same device; or set allow_soft_placement=True."))


def _error(op: Operation, msg: str, hint: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"Cannot assign a device for operation '{op.name}': {msg}",
                                op=op, hint=hint)


# ---- assignment -----------------------------------------------------------------------------
class _Assigner:
    def __init__(self, devices: list[Device], soft: bool, default_task: DeviceSpec) -> None:
        self.devices = sorted(devices, key=lambda d: (-_TYPE_PRIORITY.get(d.device_type, 0),
                                                      d.name))
        self.soft = soft
        self.default_task = default_task

    def run(self, ops: list[Operation], groups: dict[str, _Group]) -> Placement:
        out = Placement()
        generators = []
        for op in ops:
            if _is_generator(op):
                generators.append(op)
                continue
            self._assign(op, groups[op.name], out)
        consumers = _consumers(ops)
        for op in generators:
            g = groups[op.name]
            if g.device is None:
                g.device = self._generator_device(op, g, consumers.get(op.name, ()), out)
            self._record(op, g.device, out)
        return out

    def _assign(self, op: Operation, g: _Group, out: Placement) -> None:
        if g.device is None:
            g.device = self._candidates(op, g)[0]
        self._record(op, g.device, out)

    @staticmethod
    def _record(op: Operation, device: Device, out: Placement) -> None:
        out.devices[op.name] = device
        out.types[op.name] = op.type
        out.order.append(op.name)

    def _generator_device(self, op: Operation, g: _Group, users: Iterable[Operation],
                          out: Placement) -> Device:
        allowed = self._candidates(op, g)
        used = {out.devices[u.name].name for u in users if u.name in out.devices}
        if len(used) == 1:
            anywhere = self._matching(g.spec, g.types) if g.spec.job is None else allowed
            for d in anywhere:
                if d.name in used:
                    return d
        return allowed[0]

    def _candidates(self, op: Operation, g: _Group) -> list[Device]:
        spec = g.spec if g.spec.job is not None else self.default_task.merge_from(g.spec)
        found = self._matching(spec, g.types)
        if found:
            return found
        if self.soft:
            relaxed = self._matching(spec.replace(device_type=None, device_index=None), g.types)
            if relaxed:
                return relaxed
        raise self._no_device(op, g, spec)

    def _matching(self, spec: DeviceSpec, types: set[str] | None) -> list[Device]:
        return [d for d in self.devices if spec.matches(d.spec) and d.device_type in (types or ())]

    def _no_device(self, op: Operation, g: _Group, spec: DeviceSpec) -> InvalidArgumentError:
        first = g.members[0]
        req = first.device or (g.requests[0] if g.requests else spec.to_string())
        if not [d for d in self.devices if spec.matches(d.spec)]:
            names = ", ".join(d.name for d in sorted(self.devices, key=lambda d: d.name))
            shorts = join(d.short_name for d in sorted(self.devices, key=lambda d: d.name))
            return _error(first, f"Operation was explicitly assigned to {req} but available "
                          f"devices are [ {names} ]. Make sure the device specification "
                          "refers to a valid device.",
                          tr("this session has {devices}. Ask for one of those, or create the "
                             "session with config=tf.ConfigProto(allow_soft_placement=True) "
                             "to fall back to a device that exists.", devices=shorts))
        wanted = spec.device_type or "any"
        return _error(first, f"Could not satisfy explicit device specification '{req}' because "
                      f"no supported kernel for {wanted} devices is available."
                      f"{_debug_info(g)}\n{first.op_def.registered_kernels_text()}",
                      tr("{op_type} has no {device_type} kernel for dtype {dtype}. Use a dtype "
                         "the device supports (e.g. a float variable such as "
                         "tf.Variable(3.0)), pin the op to /cpu:0, or set "
                         "allow_soft_placement=True to let it move to the CPU.",
                         op_type=first.type, device_type=wanted, dtype=_dtype_of(first)))


def _dtype_of(op: Operation) -> str:
    dt = op.attrs.get(op.op_def.dtype_attr)
    return getattr(dt, "name", "?")


def _debug_info(g: _Group) -> str:
    if len(g.members) < 2:
        return ""
    lines = ["", "Colocation Debug Info:",
             "Colocation group had the following types and devices: "]
    seen = set()
    for m in g.members:
        if m.type not in seen:
            seen.add(m.type)
            lines.append(f"{m.type}: {' '.join(m.op_def.supported_device_types(m)[::-1])} ")
    lines += ["", "Colocation members and user-requested devices:"]
    lines += [f"  {m.name} ({m.type}) {m.device}" for m in g.members]
    return "\n".join(lines)


def _is_generator(op: Operation) -> bool:
    return not op.inputs and len(op.outputs) == 1 and not op.outputs[0].is_ref


def _consumers(ops: list[Operation]) -> dict[str, list[Operation]]:
    out: dict[str, list[Operation]] = {}
    for op in ops:
        for t in op.inputs:
            out.setdefault(t.op.name, []).append(op)
    return out
