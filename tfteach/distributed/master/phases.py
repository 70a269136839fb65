"""Cutting an untraced step's task parts into phases (``split_phases``).

Every transfer between the master's part and another task's part travels inside RunGraph
calls, with no RecvTensor at all. Each other part is cut into phases: phase 0 needs nothing
from the master; a node that needs a tensor the master's part computed from phase ``k``
answers runs in phase ``k + 1``. The master runs a phase once the tensors it needs are sent
(they go in the RunGraph request, as TF's ``RunGraphRequest.send``), and every tensor a
phase sends to the master comes back in its answer. A training step with variables on the
ps then costs two RunGraph calls to the ps (read the variables; apply the gradients)
instead of one RunGraph and four RecvTensor calls. Ops without inputs that only name state
(``VariableV2``, ``Const``, a feed's ``Placeholder``) are copied into every phase that uses
them; a value a later phase uses is carried (``_phases_of``). Phases run in stages, the
master's phase k then the others' phases k, each stage after the last, so a control edge
between tasks needs no transfer: the order of the stages keeps it. A reference used across
phases keeps the step on RecvTensor, and so does a while loop (its iterations run in one call).

A tensor between two tasks other than the master (a model on worker 1 of a session on worker
0, towers on several workers) goes through the master too: the sender's phase ``k`` answers
it, and the receiver's phase ``k + 1`` or later is fed it (``k`` is the phase just before
the receiver's: ``_later_sends``); a session whose ops all run on
other tasks gets an empty part of the master's. One of ``DIRECT_BYTES`` or more (by its
static shape) is pulled instead by its receiver's ``_Recv`` from the sender's rendezvous
(one RecvTensorInline into a reused segment of the receiver's on one host), which spares it
two copies through the master; the receiver's phase is then the sender's (or later), so both
calls are in flight at once, as TF's master starts every partition together.

Input: the parts ``partition.Partitioner`` made (nodes are ``framework.node_def.NodeDef``s, in
topological order). Output: one ``TaskPart`` per (task, phase), the master's first, then the
parts that pull a tensor (``_pulls``).
"""
from __future__ import annotations

import dataclasses

from tfteach.distributed.contract.rendezvous import rendezvous_key
from tfteach.distributed.master import partition_nodes
from tfteach.distributed.master.partition_nodes import RECV, SEND, tensor_types
from tfteach.distributed.master.partition import TaskPart, users_of
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.node_def import NodeDef, source_of

DIRECT_BYTES = 4 << 20   # a tensor between two other tasks this big (known statically) is
                         # pulled by its receiver, not carried through the master
DIRECT_APART_BYTES = 256 << 10  # ... this big, where either task is not on the master's
                                # host (through the master it would cross the network twice)

def split_phases(parts: dict[str, TaskPart], master: str, tensors: dict[str, Tensor],
                 apart: frozenset = frozenset()) -> list[TaskPart] | None:
    """Every part cut into phases (module docstring): the master's first, in the order it
    runs them, then the others'; None when the step must keep using RecvTensor.
    ``tensors`` (name -> Tensor) gives the types of values the master carries over;
    ``apart``, the tasks not on the master's host (``DIRECT_APART_BYTES``)."""
    if len(parts) < 2 or _has_loop(parts):  # one task: nothing crosses; a loop's
        return None                           # iterations cannot be cut into phases
    if master not in parts:     # the master only runs the step (its model is elsewhere)
        parts = {master: TaskPart(master), **parts}
    sends = {node.key: (part.task, node.name)
             for part in parts.values() for node in part.nodes if node.op == SEND}
    direct = _direct_keys(parts, master, apart)
    levels = _levels(parts, master, sends, direct)
    others: list[TaskPart] = []
    recv_phase: dict[str, int] = {}         # rendezvous key -> phase of its _Recv
    phase_ofs = {}
    for task in [t for t in parts if t != master]:
        part = parts[task]
        phase_ofs[task] = _lift_recvs(part, {n.name: levels[(task, n.name)]
                                             for n in part.nodes})
        recv_phase.update((n.key, phase_ofs[task][n.name]) for n in part.nodes
                          if n.op == RECV)
    for task, phase_of in phase_ofs.items():
        phase_of = _later_sends(parts[task], phase_of, recv_phase)
        phases = _phases_of(parts[task], phase_of, tensors, at_master=False, direct=direct)
        if phases is None:
            return None
        others.extend(phases)
    others.sort(key=lambda p: not _pulls(p, direct))
    part = parts[master]     # its level -1 (nothing from the others) is its phase 0
    soonest = {n.name: levels[(master, n.name)] + 1 for n in part.nodes}
    late = _as_late_as_possible(part, soonest, recv_phase)
    masters = _phases_of(part, _lift_recvs(part, _in_used_phases(part, soonest, late)),
                         tensors, at_master=True) or \
        _phases_of(part, _lift_recvs(part, late), tensors, at_master=True)
    return None if masters is None else masters + others


def _pulls(part: TaskPart, direct: frozenset) -> bool:
    """Whether ``part`` pulls a tensor from another task (``direct``): such parts come
    first, so the master sends their calls first (the first on its own thread) and their
    requests reach the senders sooner, which then send as soon as they computed."""
    return any(node.op == RECV and node.key in direct for node in part.nodes)


def _has_loop(parts: dict[str, TaskPart]) -> bool:
    """Whether a part holds a while loop (a ``NextIteration``): its back edge is a cycle,
    and its iterations run in one RunGraph call, so the step keeps RecvTensor."""
    return any(node.op_def.extra.get("flow") == "next"
               for part in parts.values() for node in part.nodes)


def _levels(parts: dict[str, TaskPart], master: str, sends: dict,
            direct: frozenset) -> dict[tuple, int]:
    """Per ``(task, node)``: outside the master's part, the phase it runs in; inside it, the
    latest phase whose answer it waits for (-1: none). A pulled ``_Recv`` (``direct``) is
    in its ``_Send``'s phase: both tasks' calls are in flight at once, as TF's, and the
    receiver's pull waits in the sender's rendezvous (one round trip, not two in turn)."""
    nodes = {(p.task, n.name): n for p in parts.values() for n in p.nodes}

    def preds(key: tuple) -> list[tuple]:
        node = nodes[key]
        out = [(key[0], name) for name in node.sources]
        if node.op == RECV:
            out.append(sends[node.key])
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
                pulled = nodes[key].op == RECV and nodes[key].key in direct
                level[key] = max([0] + [level[p] + (p[0] != key[0] and not pulled)
                                        for p in preds(key)])
    return level


def _as_late_as_possible(part: TaskPart, phase_of: dict[str, int],
                         recv_phase: dict[str, int]) -> dict[str, int]:
    """The master's ops each in the last phase that still feeds their users in time (a
    ``_Send`` before the phase of its ``_Recv``): the master then runs fewer phases (a
    learning rate no longer needs one of its own before the variables are read) and
    carries fewer values between them. Ops nothing uses (fetches, sinks) run as soon as
    they can."""
    users = users_of(part)
    late: dict[str, int] = {}
    for node in reversed(part.nodes):       # the nodes are in topological order
        bounds = [late[user] for user in users.get(node.name, [])]
        if node.op == SEND:
            bounds.append(recv_phase[node.key])
        name = node.name
        late[name] = max(min(bounds, default=phase_of[name]), phase_of[name])
    return late


def _in_used_phases(part: TaskPart, soonest: dict[str, int],
                    late: dict[str, int]) -> dict[str, int]:
    """The master's ops each in the first phase that the latest placement
    (``_as_late_as_possible``) runs anyway, once its inputs are computed: no phase more, yet
    work that needs no answer of a phase runs before it, while that phase's calls to other
    tasks are in flight (towers: the master's own backward pass no longer waits for the
    other towers' gradients). With a reference to carry, the latest placement is used."""
    used = sorted(set(late.values()))
    phase_of: dict[str, int] = {}
    for node in part.nodes:                 # topological order
        ready = max([soonest[node.name]] + [phase_of[name] for name in node.sources])
        phase_of[node.name] = next(k for k in used if k >= ready)
    return phase_of


def _later_sends(part: TaskPart, phase_of: dict[str, int],
                 recv_phase: dict[str, int]) -> dict[str, int]:
    """A ``_Send`` of another task's part to a task other than the master answers in the
    phase just before its ``_Recv`` is fed, not the first it could: a learning rate for the
    ps's apply phase then needs no phase of its own before the model runs (one RunGraph
    call fewer)."""
    for node in part.nodes:
        if node.op == SEND and node.key in recv_phase:
            phase_of[node.name] = max(phase_of[node.name], recv_phase[node.key] - 1)
    return phase_of


def _lift_recvs(part: TaskPart, phase_of: dict[str, int]) -> dict[str, int]:
    """A tensor from the master is fed to the first phase that uses it, not the first it
    could be (a learning rate computed without the ps's answers is used when applying)."""
    users = users_of(part)
    for node in part.nodes:
        if node.op == RECV and users.get(node.name):
            phase_of[node.name] = min(phase_of[user] for user in users[node.name])
    return phase_of


def _phases_of(part: TaskPart, phase_of: dict[str, int], tensors: dict[str, Tensor],
               at_master: bool, direct: frozenset = frozenset()) -> list[TaskPart] | None:
    """``part`` as one TaskPart per phase, or None if a value a later phase uses is a
    reference (a variable's storage). Phases of a task run one after the other, so a
    control edge between them holds by that order; a value is carried: at the master the
    earlier phase returns it and the later one is fed it, elsewhere it waits in the task's
    rendezvous (a ``_Send``/``_Recv`` pair within the task)."""
    by_name = {n.name: n for n in part.nodes}
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
        if _copyable(node) or node.carries_control:
            continue
        ph = phase(phase_of[node.name])
        inputs = []
        for edge in node.input:
            name = source_of(edge)
            if edge.startswith("^") and by_name[name].carries_control:
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
            ph.consumed.add(source_of(edge))
            inputs.append(edge)
        node = node if inputs == node.input else dataclasses.replace(node, input=inputs)
        pulled = node.op in (SEND, RECV) and node.key in direct   # large, between others
        for phase_node in [node] if pulled else _as_phase_nodes(node, ph, not at_master):
            ph.add(phase_node)
    for name in [n.name for n in part.nodes if _copyable(n) and n.name not in placed]:
        copy_in(phase(0), name)
    for tensor in part.fetches:
        name = source_of(tensor)
        next(p for _, p in sorted(phases.items()) if name in p.names).fetches.append(tensor)
    out = [phases[k] for k in sorted(phases) if _does_something(phases[k])]
    for later in out[1:]:
        later.first = False
    return out


def _does_something(ph: TaskPart) -> bool:
    """Whether a phase has work: a phase of only idle ops (``OpDef.idle``: NoOps,
    constants, variables) that returns and takes nothing is not run."""
    return bool(ph.fetches or ph.inputs or ph.carry_out) or any(
        not n.op_def.idle for n in ph.nodes)


def _carried_type(tensor: str, by_name: dict, tensors: dict[str, Tensor]) -> tuple | None:
    """``(dtype attr, shape attr)`` of a value carried between phases; None for a ref."""
    node = by_name[source_of(tensor)]
    if node.op == RECV:
        return node.attr["dtype"], node.attr["shape"]
    t = tensors.get(tensor)
    return None if t is None or t.is_ref else tensor_types(t)


def _carry(tensor: str, by_name: dict, tensors: dict[str, Tensor], source: TaskPart,
           ph: TaskPart) -> str | None:
    """Feed ``tensor`` of an earlier master phase ``source`` into ``ph`` through a
    Placeholder; its name, or None for a reference."""
    types = _carried_type(tensor, by_name, tensors)
    if types is None:
        return None
    name = f"_carry/{tensor.replace(':', '_')}"
    if name not in ph.names:
        ph.add(partition_nodes.placeholder(name, by_name[source_of(tensor)].device, *types))
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
    device = by_name[source_of(tensor)].device
    key = rendezvous_key(device, device, tensor, incarnation="carry")
    flat = tensor.replace(":", "_")
    if f"_carry_send/{flat}" not in source.names:
        source.add(partition_nodes.send(f"_carry_send/{flat}", device, tensor, key, types[0]))
        source.consumed.add(source_of(tensor))
    name = f"_carry/{flat}"
    if name not in ph.names:
        ph.add(partition_nodes.recv(name, device, key, types, device, ph.task, "", tensor))
    return f"{name}:0"


def _copyable(node: NodeDef) -> bool:
    """Whether ``node`` is copied into the phases that use it (``OpDef.copyable``, and not
    waiting on anything)."""
    return node.op_def.copyable and not node.input


def _as_phase_nodes(node: NodeDef, ph: TaskPart, answers: bool) -> list[NodeDef]:
    """A ``_Recv`` becomes a Placeholder fed from the master's rendezvous; a ``_Send`` of
    another task's part answers to the master (``answers``)."""
    if node.op == SEND and answers:   # a copy: the step may still fall back
        return [dataclasses.replace(node, attr={**node.attr, "to_master": True})]
    if node.op != RECV:
        return [node]
    ph.inputs[f"{node.name}:0"] = node.key
    return [partition_nodes.placeholder(node.name, node.device, node.attr["dtype"],
                                        node.attr["shape"])]


def _direct_keys(parts: dict[str, TaskPart], master: str, apart: frozenset) -> frozenset:
    """The rendezvous keys of the transfers between two tasks other than the master whose
    tensors are ``DIRECT_BYTES`` or more (``DIRECT_APART_BYTES`` where either task is in
    ``apart``): the receiver pulls them from the sender's rendezvous (one RecvTensorInline,
    through shared memory on one host, or its bulk port) while the sender's call runs,
    instead of two copies more through the master."""
    keys = set()
    for part in parts.values():
        for node in part.nodes:
            src = node.attr["src_task"] if node.op == RECV else ""
            least = DIRECT_APART_BYTES if apart & {src, part.task} else DIRECT_BYTES
            if node.op == RECV and master not in (part.task, src) and \
                    _static_bytes(node) >= least:
                keys.add(node.key)
    return frozenset(keys)


def _static_bytes(recv: NodeDef) -> int:
    """The size of a ``_Recv``'s tensor from its static shape (0 if not fully known)."""
    dims = recv.attr["shape"]["shape"]
    if dims is None or any(d is None or d < 0 for d in dims):
        return 0
    size = dtypes.as_dtype(recv.attr["dtype"]["dtype"]).size
    for d in dims:
        size *= d
    return size
