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

A tensor from inside a cond branch or a while loop may be dead: its ``_Recv`` is marked
``may_be_dead`` (its step runs in frames; the deadness crosses with the tensor, as TF's
``is_dead``) and never goes through the master's RunGraph answer (the master then runs
the step without phases). A tensor from inside a while loop may not cross tasks
(``UnimplementedError`` naming the loop and both tasks): transfer keys do not tell
iterations apart.

Phases (cutting each part into the stages of an untraced step) are ``phases``'s job.
Nodes are ``tfteach.framework.node_def.NodeDef``s (the nodes added here come from
``partition_nodes``); ``TaskPart.graph_def`` gives the dict RegisterGraph sends.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from tfteach.distributed.contract.rendezvous import rendezvous_key
from tfteach.distributed.master import partition_nodes
from tfteach.distributed.master.partition_nodes import RECV, SEND, tensor_types
from tfteach.errors import UnimplementedError
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.node_def import GraphDef, NodeDef, source_of
from tfteach.i18n import tr


def task_of(device_name: str) -> str:
    """``/job:w/replica:0/task:1/device:CPU:0`` -> ``/job:w/replica:0/task:1``."""
    return device_name.rsplit("/device:", 1)[0]


@dataclass
class TaskPart:
    """The nodes one task runs in a step (or in one phase of it) and how it is fed."""

    task: str
    nodes: list[NodeDef] = field(default_factory=list)
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

    def add(self, node: NodeDef) -> None:
        self.nodes.append(node)
        self.names.add(node.name)

    def graph_def(self) -> dict:
        """The part as the graph def RegisterGraph sends (``graph_io``'s format)."""
        return GraphDef(self.nodes).to_dict()

    def targets(self) -> list[str]:
        return [n.name for n in self.nodes if n.name not in self.consumed or n.op == SEND]


class Partitioner:
    """Builds the per-task graph defs of one step (see the module docstring)."""

    def __init__(self, placement: dict, addresses: dict, bypass_noops: bool = False) -> None:
        self.placement = placement        # op name -> Device
        self.addresses = addresses        # task name -> host:port
        self.bypass_noops = bypass_noops  # wait on a NoOp's control inputs instead of it
        self.parts: dict[str, TaskPart] = {}
        self.recvs: dict[tuple, str] = {}
        self.depth: dict = {}                        # op name -> conds/loops it is inside
        self.loop_depth: dict = {}                   # op name -> loops it is inside
        self.loops: dict = {}                        # op name -> the loop it runs in
        self.may_be_dead = False                     # a transfer may carry a dead tensor
        self.tensors: dict[str, Tensor] = {}        # every output of the step's ops, by name

    def part(self, task: str) -> TaskPart:
        if task not in self.parts:
            self.parts[task] = TaskPart(task)
        return self.parts[task]

    def run(self, ops: list[Operation], fed: set[Tensor], fetches: list[Tensor],
            master: str | None = None) -> dict:
        self.depth, self.loop_depth = _flow_depths(ops), _flow_depths(ops, loops_only=True)
        self.loops = _loop_names(ops)
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
        node = NodeDef.of(op, dev)
        node.input = [self._input(t, part, dev, fed) for t in op.inputs]
        node.input += [self._control(c, part, dev) for c in self._waits_on(op)]
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
            if c.op_def.idle and not c.inputs and not c.outputs:     # a NoOp
                stack.extend(reversed(c.control_inputs))
            else:
                out.setdefault(c.name, c)
        return list(out.values())

    def _input(self, t: Tensor, part: TaskPart, dev: str, fed: set[Tensor]) -> str:
        if t in fed:
            name = f"_feed/{t.op.name}_{t.value_index}"
            if name not in part.names:
                part.add(partition_nodes.placeholder(name, dev, *tensor_types(t)))
                part.feeds[f"{name}:0"] = t.name
            part.consumed.add(name)
            return f"{name}:0"
        src_dev = self.placement[t.op.name].name
        if task_of(src_dev) == part.task:
            part.consumed.add(t.op.name)
            return t.name
        return self._recv(t.name, tensor_types(t), src_dev, part, dev) + ":0"

    def _control(self, c: Operation, part: TaskPart, dev: str) -> str:
        src_dev = self.placement[c.name].name
        if task_of(src_dev) == part.task:
            part.consumed.add(c.name)
            return f"^{c.name}"
        src_part = self.part(task_of(src_dev))
        const = f"_ctl/{c.name}"
        if const not in src_part.names:
            src_part.add(partition_nodes.control_const(const, src_dev, after=c.name))
            src_part.consumed.add(c.name)
            self.depth[const], self.loop_depth[const] = self.depth.get(c.name, 0), \
                self.loop_depth.get(c.name, 0)
            if c.name in self.loops:
                self.loops[const] = (c.name, self.loops[c.name][1])
        return "^" + self._recv(f"{const}:0", partition_nodes.control_types(), src_dev, part,
                                dev, carries_control=True)

    def _recv(self, tensor: str, types: tuple[dict, dict], src_dev: str, part: TaskPart,
              dev: str, carries_control: bool = False) -> str:
        """The ``_Recv`` in ``part`` of ``tensor`` (its dtype and shape attrs ``types``)
        from ``src_dev``, and the ``_Send`` in the source's part; the ``_Recv``'s name."""
        key = (tensor, part.task)
        if key in self.recvs:
            return self.recvs[key]
        rkey = rendezvous_key(src_dev, dev, tensor)
        src_task = task_of(src_dev)
        src_part = self.part(src_task)
        src_part.consumed.add(source_of(tensor))
        flat = tensor.replace(":", "_")
        dst = part.task.strip("/").replace("/", "_").replace(":", "")
        src_part.add(partition_nodes.send(f"_send/{flat}/to_{dst}", src_dev, tensor, rkey,
                                          types[0], carries_control))
        name = f"_recv/{flat}"
        if self.loop_depth.get(source_of(tensor), 0) > 0:
            source, loop = self.loops.get(source_of(tensor), (source_of(tensor), "?"))
            raise _loop_across_tasks(source, loop, src_task, part.task)
        recv = partition_nodes.recv(name, dev, rkey, types, src_dev, src_task,
                                    self.addresses[src_task], tensor, carries_control)
        if self.depth.get(source_of(tensor), 0) > 0:
            recv.attr["may_be_dead"] = True     # from inside a cond or loop: see route_...
            self.may_be_dead = True
        part.add(recv)
        self.recvs[key] = name
        return name


def _loop_across_tasks(source: str, loop: str, src_task: str,
                       task: str) -> UnimplementedError:
    return UnimplementedError(
        f"Control flow across tasks: the tf.while_loop '{loop}' has ops on {src_task} and "
        f"on {task}, which reads '{source}' of the loop's iterations on {src_task}.", hint=tr(
            "tfteach runs a tf.while_loop on one task (its transfers are not told apart by "
            "iteration): place the loop's ops on one task with tf.device; the loop may read "
            "tensors and variables of other tasks, but an update of another task's variable "
            "(an assign colocated with it) belongs after the loop."))


def _flow_depths(ops: list[Operation], loops_only: bool = False) -> dict:
    """How many conds and loops each op's outputs are inside (op name -> depth): a cond's
    Switch and an Enter open one, a cond's Merge and an Exit close one; a loop's own
    Switch (on its LoopCond) and Merge (with a NextIteration) stay in the loop.
    ``loops_only``: count loops only (Enter and Exit)."""
    depth: dict = {}
    for op in ops:
        ins = [depth.get(t.op.name, 0) for t in op.inputs
               if t.op.op_def.extra.get("flow") != "next" or op.type != "Merge"]
        ins += [depth.get(c.name, 0) for c in op.control_inputs]
        d = max(ins, default=0)
        role = op.op_def.extra.get("flow")
        loop_switch = role == "switch" and op.inputs[1].op.op_def.extra.get("flow") == "loop_cond"
        loop_merge = role == "merge" and any(t.op.op_def.extra.get("flow") == "next"
                                             for t in op.inputs)
        if role == "enter" or (role == "switch" and not loop_switch and not loops_only):
            d += 1
        elif role == "exit" or (role == "merge" and not loop_merge and not loops_only):
            d = max(0, d - 1)
        depth[op.name] = d
    return depth


def _loop_names(ops: list[Operation]) -> dict:
    """The innermost while loop each op inside one runs in: op name -> (op name, the loop's
    name: its frame's name without TF's ``/while_context``). An Enter opens its frame, an
    Exit returns to the frame around it; a loop's Merge does not follow its back edge."""
    frame: dict = {}
    outer: dict = {}
    for op in ops:
        sources = [t.op.name for t in op.inputs
                   if t.op.op_def.extra.get("flow") != "next" or op.type != "Merge"]
        inner = next((frame[s] for s in sources + [c.name for c in op.control_inputs]
                      if s in frame), None)
        role = op.op_def.extra.get("flow")
        if role == "enter":
            name = str(op.attrs.get("frame_name", op.name))
            outer.setdefault(name, inner)
            inner = name
        elif role == "exit":
            inner = outer.get(inner)
        if inner is not None:
            frame[op.name] = inner
    return {name: (name, _loop_name(f)) for name, f in frame.items()}


def _loop_name(frame: str) -> str:
    suffix = "/while_context"
    return frame[:-len(suffix)] if frame.endswith(suffix) else frame


def route_through_master(parts: dict[str, TaskPart], master: str) -> None:
    """Mark the transfers into ``master``'s part that only sinks receive (module doc)."""
    part = parts[master]
    ops = {node.name: node.op for node in part.nodes}
    consumers = users_of(part)
    keys = set()
    for node in part.nodes:
        users = consumers.get(node.name, [])
        if node.op == RECV and users and not node.attr.get("may_be_dead") and all(
                user not in part.consumed and ops[user] != SEND for user in users):
            node.attr["via_master"] = True
            keys.add(node.key)
    for other in parts.values():
        for node in other.nodes:
            if node.op == SEND and node.key in keys:
                node.attr["to_master"] = True


def users_of(part: TaskPart) -> dict[str, list[str]]:
    """Node name -> the names of the nodes of ``part`` that take it as an input."""
    users: dict[str, list[str]] = {}
    for node in part.nodes:
        for name in node.sources:
            users.setdefault(name, []).append(node.name)
    return users
