"""Cutting a placed graph into one graph def per task (TF's ``SplitByWorker``).

Input: the ops a step needs (topological order), their assigned devices, the fed tensors.
Output: ``{task_name: TaskPart}``, where each part holds a graph def (every node pinned to its
assigned full device name), the feed keys it expects and the fetch names it returns.

Rules:
- an edge whose ends are on two tasks becomes ``_Send`` (producer's device) + ``_Recv``
  (first consumer's device), one ``_Recv`` per (tensor, destination task);
- a control edge across tasks sends a dummy scalar: ``Const`` (with the control input) ->
  ``_Send`` -> ``_Recv``, and the ``_Recv`` becomes the control input;
- a fed tensor becomes a ``Placeholder`` in each task that consumes it; the master feeds it;
- every ``_Send`` and every op without a consumer in its part is a target of that part;
- given the master's task, a transfer into the master's part whose receiving ops there are
  all sinks (nothing consumes them) goes back in the sender's RunGraph answer instead of
  a RecvTensor call: its ``_Send`` gets ``to_master``, its ``_Recv`` ``via_master`` (TF's
  RunGraphResponse.recv). No op waits on a sink, so the value may arrive when the
  sender's part has finished.

Phases (``split_phases``, for untraced steps): every transfer between the master's part and
another task's part travels inside RunGraph calls, with no RecvTensor at all. Each other
part is cut into phases: phase 0 needs nothing from the master; a node that needs a tensor
the master's part computed from phase ``k`` answers runs in phase ``k + 1``. The master
runs a phase once the tensors it needs are sent (they go in the RunGraph request, as TF's
``RunGraphRequest.send``), and every tensor a phase sends to the master comes back in its
answer. A training step with variables on the ps then costs two RunGraph calls to the ps
(read the variables; apply the gradients) instead of one RunGraph and four RecvTensor
calls. Ops without inputs that only name state (``VariableV2``, ``Const``, a feed's
``Placeholder``) are copied into every phase that uses them; a value a later phase uses is
carried (``_phases_of``). Phases run in stages, the master's phase k then the others'
phases k, each stage after the last, so a control edge between tasks needs no transfer: the
order of the stages keeps it. A reference used across phases, or a transfer between two
tasks other than the master's, keeps the step on RecvTensor.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.graph_io import node_to_dict
from tfteach.framework.tensor_shape import TensorShape


_ZERO_F32 = {"array": "AAAAAA==", "dtype": "<f4", "shape": []}   # float32 0.0, base64


def task_of(device_name: str) -> str:
    """``/job:w/replica:0/task:1/device:CPU:0`` -> ``/job:w/replica:0/task:1``."""
    return device_name.rsplit("/device:", 1)[0]


@dataclass
class TaskPart:
    task: str
    nodes: list = field(default_factory=list)
    names: set = field(default_factory=set)
    feeds: dict = field(default_factory=dict)       # placeholder tensor name -> fed tensor name
    fetches: list = field(default_factory=list)     # tensor names this part returns
    consumed: set = field(default_factory=set)
    inputs: dict = field(default_factory=dict)      # placeholder tensor name -> rendezvous key
    phase: int = 0                                   # (the master sends it from its part)
    first: bool = True                               # the task's first part in a step
    carried: dict = field(default_factory=dict)      # placeholder -> tensor of an earlier
    carry_out: list = field(default_factory=list)    # phase (master only); what it returns
    phased: bool = False                             # made by split_phases

    def add(self, node: dict) -> None:
        self.nodes.append(node)
        self.names.add(node["name"])

    def graph_def(self) -> dict:
        return {"version": 1, "node": self.nodes}

    def targets(self) -> list[str]:
        return [n["name"] for n in self.nodes
                if n["name"] not in self.consumed or n["op"] == "_Send"]


class Partitioner:
    """Builds the per-task graph defs of one step (see the module docstring)."""

    def __init__(self, placement: dict, addresses: dict, bypass_noops: bool = False) -> None:
        self.placement = placement        # op name -> Device
        self.addresses = addresses        # task name -> host:port
        self.bypass_noops = bypass_noops  # wait on a NoOp's control inputs instead of it
        self.parts: dict[str, TaskPart] = {}
        self.recvs: dict[tuple, str] = {}
        self.tensors: dict[str, Tensor] = {}        # every output of the step's ops, by name

    def part(self, task: str) -> TaskPart:
        if task not in self.parts:
            self.parts[task] = TaskPart(task)
        return self.parts[task]

    def run(self, ops: list[Operation], fed: set[Tensor], fetches: list[Tensor],
            master: str | None = None) -> dict:
        for op in ops:
            self._add_op(op, fed)
        for t in fetches:
            if t not in fed:
                self.part(task_of(self.placement[t.op.name].name)).fetches.append(t.name)
        if master in self.parts:
            route_through_master(self.parts, master)
        return self.parts

    def _add_op(self, op: Operation, fed: set[Tensor]) -> None:
        self.tensors.update((t.name, t) for t in op.outputs)
        dev = self.placement[op.name].name
        part = self.part(task_of(dev))
        node = node_to_dict(op, dev)
        node["colocation"] = []
        node["input"] = [self._input(t, part, dev, fed) for t in op.inputs]
        node["input"] += [self._control(c, part, dev) for c in self._waits_on(op)]
        part.add(node)

    def _waits_on(self, op: Operation) -> list[Operation]:
        """``op``'s control inputs; with ``bypass_noops``, a NoOp among them is replaced by
        its own control inputs (TF's dependency optimizer does the same): the order is
        the same, and a ps op that waits on a worker's NoOp grouping other ps ops (the
        global step's increment after the updates) then waits on them within its task."""
        if not self.bypass_noops:
            return list(op.control_inputs)
        out: dict = {}
        stack = list(reversed(op.control_inputs))
        while stack:
            c = stack.pop()
            if c.type == "NoOp" and not c.inputs:
                stack.extend(reversed(c.control_inputs))
            else:
                out.setdefault(c.name, c)
        return list(out.values())

    def _input(self, t: Tensor, part: TaskPart, dev: str, fed: set[Tensor]) -> str:
        if t in fed:
            name = f"_feed/{t.op.name}_{t.value_index}"
            if name not in part.names:
                part.add(_placeholder(name, dev, *_tensor_types(t)))
                part.feeds[f"{name}:0"] = t.name
            part.consumed.add(name)
            return f"{name}:0"
        src_dev = self.placement[t.op.name].name
        if task_of(src_dev) == part.task:
            part.consumed.add(t.op.name)
            return t.name
        return self._recv(t.name, t.dtype, t.shape, src_dev, part, dev) + ":0"

    def _control(self, c: Operation, part: TaskPart, dev: str) -> str:
        src_dev = self.placement[c.name].name
        if task_of(src_dev) == part.task:
            part.consumed.add(c.name)
            return f"^{c.name}"
        src_part = self.part(task_of(src_dev))
        const = f"_ctl/{c.name}"
        if const not in src_part.names:
            src_part.add({"name": const, "op": "Const", "device": src_dev, "input": [f"^{c.name}"],
                          "attr": {"value": _ZERO_F32,
                                   "dtype": {"dtype": "float32"}}, "colocation": []})
            src_part.consumed.add(c.name)
        return "^" + self._recv(f"{const}:0", dtypes.float32, TensorShape([]), src_dev, part, dev)

    def _recv(self, tensor: str, dtype, shape, src_dev: str, part: TaskPart, dev: str) -> str:
        key = (tensor, part.task)
        if key in self.recvs:
            return self.recvs[key]
        rkey = f"{src_dev};0000000000000001;{dev};{tensor};0:0"
        src_part = self.part(task_of(src_dev))
        src_part.consumed.add(tensor.rsplit(":", 1)[0])
        dst = part.task.strip("/").replace("/", "_").replace(":", "")
        src_part.add({"name": f"_send/{tensor.replace(':', '_')}/to_{dst}", "op": "_Send",
                      "device": src_dev, "input": [tensor], "colocation": [],
                      "attr": {"key": rkey, "T": {"dtype": dtype.name}}})
        name = f"_recv/{tensor.replace(':', '_')}"
        part.add({"name": name, "op": "_Recv", "device": dev, "input": [], "colocation": [],
                  "attr": {"key": rkey, "dtype": {"dtype": dtype.name},
                           "shape": {"shape": None if shape.dims is None else list(shape.dims)},
                           "src_device": src_dev, "src_task": task_of(src_dev),
                           "src_address": self.addresses[task_of(src_dev)], "tensor": tensor}})
        self.recvs[key] = name
        return name


def route_through_master(parts: dict[str, TaskPart], master: str) -> None:
    """Mark the transfers into ``master``'s part that only sinks receive (module doc)."""
    part = parts[master]
    ops = {node["name"]: node["op"] for node in part.nodes}
    consumers: dict[str, list[str]] = {}
    for node in part.nodes:
        for name in node["input"]:
            source = name[1:] if name.startswith("^") else name.rsplit(":", 1)[0]
            consumers.setdefault(source, []).append(node["name"])
    keys = set()
    for node in part.nodes:
        users = consumers.get(node["name"], [])
        if node["op"] == "_Recv" and users and all(
                user not in part.consumed and ops[user] != "_Send" for user in users):
            node["attr"]["via_master"] = True
            keys.add(node["attr"]["key"])
    for other in parts.values():
        for node in other.nodes:
            if node["op"] == "_Send" and node["attr"]["key"] in keys:
                node["attr"]["to_master"] = True


_COPYABLE = frozenset({"VariableV2", "Const", "Placeholder"})


def split_phases(parts: dict[str, TaskPart], master: str,
                 tensors: dict[str, Tensor]) -> list[TaskPart] | None:
    """Every part cut into phases (module docstring): the master's first, in the order it
    runs them, then the others'; None when the step must keep using RecvTensor.
    ``tensors`` (name -> Tensor) gives the types of values the master carries over."""
    if master not in parts or len(parts) < 2:
        return None
    sends = {}
    for part in parts.values():
        for node in part.nodes:
            if node["op"] == "_Send":
                sends[node["attr"]["key"]] = (part.task, node["name"])
            elif node["op"] == "_Recv" and master not in (part.task, node["attr"]["src_task"]):
                return None
    levels = _levels(parts, master, sends)
    others: list[TaskPart] = []
    recv_phase: dict[str, int] = {}         # rendezvous key -> phase of its _Recv
    for task in [t for t in parts if t != master]:
        part = parts[task]
        phase_of = _lift_recvs(part, {n["name"]: levels[(task, n["name"])] for n in part.nodes})
        recv_phase.update((n["attr"]["key"], phase_of[n["name"]])
                          for n in part.nodes if n["op"] == "_Recv")
        phases = _phases_of(part, phase_of, tensors, at_master=False)
        if phases is None:
            return None
        others.extend(phases)
    part = parts[master]     # its level -1 (nothing from the others) is its phase 0
    phase_of = {n["name"]: levels[(master, n["name"])] + 1 for n in part.nodes}
    phase_of = _lift_recvs(part, _as_late_as_possible(part, phase_of, recv_phase))
    masters = _phases_of(part, phase_of, tensors, at_master=True)
    return None if masters is None else masters + others


def _source(name: str) -> str:
    return name[1:] if name.startswith("^") else name.rsplit(":", 1)[0]


def _levels(parts: dict[str, TaskPart], master: str, sends: dict) -> dict[tuple, int]:
    """Per ``(task, node)``: outside the master's part, the phase it runs in; inside it, the
    latest phase whose answer it waits for (-1: none)."""
    nodes = {(p.task, n["name"]): n for p in parts.values() for n in p.nodes}

    def preds(key: tuple) -> list[tuple]:
        node = nodes[key]
        out = [(key[0], _source(name)) for name in node["input"]]
        if node["op"] == "_Recv":
            out.append(sends[node["attr"]["key"]])
        return out

    level: dict[tuple, int] = {}
    for start in nodes:
        stack = [(start, False)]
        while stack:
            key, ready = stack.pop()
            if key in level:
                continue
            if not ready:
                stack.append((key, True))
                stack.extend((p, False) for p in preds(key) if p not in level)
            elif key[0] == master:
                level[key] = max([-1] + [level[p] for p in preds(key)])
            else:
                level[key] = max([0] + [level[p] + (p[0] == master) for p in preds(key)])
    return level


def _as_late_as_possible(part: TaskPart, phase_of: dict[str, int],
                         recv_phase: dict[str, int]) -> dict[str, int]:
    """The master's ops each in the last phase that still feeds their users in time (a
    ``_Send`` before the phase of its ``_Recv``): the master then runs fewer phases (a
    learning rate no longer needs one of its own before the variables are read) and
    carries fewer values between them. Ops nothing uses (fetches, sinks) run as soon as
    they can."""
    users = _users(part)
    late: dict[str, int] = {}
    for node in reversed(part.nodes):       # the nodes are in topological order
        bounds = [late[user] for user in users.get(node["name"], [])]
        if node["op"] == "_Send":
            bounds.append(recv_phase[node["attr"]["key"]])
        name = node["name"]
        late[name] = max(min(bounds, default=phase_of[name]), phase_of[name])
    return late


def _lift_recvs(part: TaskPart, phase_of: dict[str, int]) -> dict[str, int]:
    """A tensor from the master is fed to the first phase that uses it, not the first it
    could be (a learning rate computed without the ps's answers is used when applying)."""
    users = _users(part)
    for node in part.nodes:
        if node["op"] == "_Recv" and users.get(node["name"]):
            phase_of[node["name"]] = min(phase_of[user] for user in users[node["name"]])
    return phase_of


def _users(part: TaskPart) -> dict[str, list[str]]:
    """Node name -> the names of the nodes of ``part`` that take it as an input."""
    users: dict[str, list[str]] = {}
    for node in part.nodes:
        for name in map(_source, node["input"]):
            users.setdefault(name, []).append(node["name"])
    return users


def _phases_of(part: TaskPart, phase_of: dict[str, int], tensors: dict[str, Tensor],
               at_master: bool) -> list[TaskPart] | None:
    """``part`` as one TaskPart per phase, or None if a value a later phase uses is a
    reference (a variable's storage). Phases of a task run one after the other, so a
    control edge between them holds by that order; a value is carried: at the master the
    earlier phase returns it and the later one is fed it, elsewhere it waits in the task's
    rendezvous (a ``_Send``/``_Recv`` pair within the task)."""
    by_name = {n["name"]: n for n in part.nodes}
    phases: dict[int, TaskPart] = {}
    placed: set = set()

    def phase(k: int) -> TaskPart:
        return phases.setdefault(k, TaskPart(part.task, phase=k, phased=True))

    def copy_in(ph: TaskPart, name: str) -> None:
        if name not in ph.names:
            ph.add(by_name[name])
            if f"{name}:0" in part.feeds:
                ph.feeds[f"{name}:0"] = part.feeds[f"{name}:0"]
            placed.add(name)

    for node in part.nodes:
        if _copyable(node) or _control_transfer(node):
            continue
        ph = phase(phase_of[node["name"]])
        inputs = []
        for edge in node["input"]:
            name = _source(edge)
            if edge.startswith("^") and _control_transfer(by_name[name]):
                continue        # the phases' order keeps it (module docstring)
            if _copyable(by_name[name]):
                copy_in(ph, name)
            elif phase_of[name] != ph.phase:
                if edge.startswith("^"):
                    continue
                carry = _carry if at_master else _carry_in_task
                edge = carry(edge, by_name, tensors, phases[phase_of[name]], ph)
                if edge is None:
                    return None
            ph.consumed.add(_source(edge))
            inputs.append(edge)
        node = node if inputs == node["input"] else {**node, "input": inputs}
        for phase_node in _as_phase_nodes(node, ph, not at_master):
            ph.add(phase_node)
    for name in [n["name"] for n in part.nodes if _copyable(n) and n["name"] not in placed]:
        copy_in(phase(0), name)
    for tensor in part.fetches:
        name = tensor.rsplit(":", 1)[0]
        next(p for _, p in sorted(phases.items()) if name in p.names).fetches.append(tensor)
    out = [phases[k] for k in sorted(phases) if _does_something(phases[k])]
    for later in out[1:]:
        later.first = False
    return out


_IDLE = frozenset({"NoOp", "Const", "VariableV2", "Placeholder", "Identity"})


def _does_something(ph: TaskPart) -> bool:
    """Whether a phase has work: a phase of only NoOps, constants and variables that
    returns and takes nothing is not run."""
    return bool(ph.fetches or ph.inputs or ph.carry_out) or any(
        n["op"] not in _IDLE for n in ph.nodes)


def _control_transfer(node: dict) -> bool:
    """The nodes that carry a control edge between tasks (``Partitioner._control``)."""
    if node["op"] == "_Recv":
        return node["attr"]["tensor"].startswith("_ctl/")
    if node["op"] == "_Send":
        return node["input"][0].startswith("_ctl/")
    return node["op"] == "Const" and node["name"].startswith("_ctl/")


def _carried_type(tensor: str, by_name: dict, tensors: dict[str, Tensor]) -> tuple | None:
    """``(dtype attr, shape attr)`` of a value carried between phases; None for a ref."""
    node = by_name[tensor.rsplit(":", 1)[0]]
    if node["op"] == "_Recv":
        return node["attr"]["dtype"], node["attr"]["shape"]
    t = tensors.get(tensor)
    return None if t is None or t.is_ref else _tensor_types(t)


def _carry(tensor: str, by_name: dict, tensors: dict[str, Tensor], source: TaskPart,
           ph: TaskPart) -> str | None:
    """Feed ``tensor`` of an earlier master phase ``source`` into ``ph`` through a
    Placeholder; its name, or None for a reference."""
    types = _carried_type(tensor, by_name, tensors)
    if types is None:
        return None
    name = f"_carry/{tensor.replace(':', '_')}"
    if name not in ph.names:
        ph.add(_placeholder(name, by_name[tensor.rsplit(":", 1)[0]]["device"], *types))
        ph.carried[f"{name}:0"] = tensor
        if tensor not in source.carry_out:
            source.carry_out.append(tensor)
    return f"{name}:0"


def _carry_in_task(tensor: str, by_name: dict, tensors: dict[str, Tensor], source: TaskPart,
                   ph: TaskPart) -> str | None:
    """Carry ``tensor`` of an earlier phase ``source`` of another task into ``ph`` through
    that task's rendezvous; the receiving node's name, or None for a reference."""
    types = _carried_type(tensor, by_name, tensors)
    if types is None:
        return None
    device = by_name[tensor.rsplit(":", 1)[0]]["device"]
    key = f"{device};carry;{device};{tensor};0:0"
    flat = tensor.replace(":", "_")
    if f"_carry_send/{flat}" not in source.names:
        source.add({"name": f"_carry_send/{flat}", "op": "_Send", "device": device,
                    "input": [tensor], "colocation": [],
                    "attr": {"key": key, "T": types[0]}})
        source.consumed.add(tensor.rsplit(":", 1)[0])
    name = f"_carry/{flat}"
    if name not in ph.names:
        ph.add({"name": name, "op": "_Recv", "device": device, "input": [], "colocation": [],
                "attr": {"key": key, "dtype": types[0], "shape": types[1],
                         "src_device": device, "src_task": ph.task, "src_address": "",
                         "tensor": tensor}})
    return f"{name}:0"


def _copyable(node: dict) -> bool:
    return node["op"] in _COPYABLE and not node["input"]


def _as_phase_nodes(node: dict, ph: TaskPart, answers: bool) -> list[dict]:
    """A ``_Recv`` becomes a Placeholder fed from the master's rendezvous; a ``_Send`` of
    another task's part answers to the master (``answers``)."""
    if node["op"] == "_Send" and answers:   # a copy: the step may still fall back
        return [{**node, "attr": {**node["attr"], "to_master": True}}]
    if node["op"] != "_Recv":
        return [node]
    attrs = node["attr"]
    ph.inputs[f"{node['name']}:0"] = attrs["key"]
    return [_placeholder(node["name"], node["device"], attrs["dtype"], attrs["shape"])]


def _tensor_types(t: Tensor) -> tuple[dict, dict]:
    """A tensor's ``dtype`` and ``shape`` attrs, as a Placeholder or ``_Recv`` holds them."""
    return ({"dtype": t.dtype.name},
            {"shape": None if t.shape.dims is None else list(t.shape.dims)})


def _placeholder(name: str, dev: str, dtype: dict, shape: dict) -> dict:
    return {"name": name, "op": "Placeholder", "device": dev, "input": [], "colocation": [],
            "attr": {"dtype": dtype, "shape": shape}}
