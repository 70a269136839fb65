"""``NodeDef``: one node of a task's part of a step, as the master's partitioner builds it.

A ``NodeDef`` is the typed form of a graph def node (``graph_io``'s
``{"name", "op", "device", "input", "attr", "colocation"}``); ``to_dict`` gives the very dict
that RegisterGraph sends, so nothing on the wire depends on this class. The constructors
make the nodes the partitioner adds to a graph (``send``, ``recv``, ``placeholder``,
``control_const``); each sets its attrs in one place. ``carries_control`` marks the nodes
that carry a control edge between tasks (a dummy scalar); it never goes on the wire.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfteach.distributed.contract import transport_ops  # noqa: F401 - registers _Send and _Recv, which ``send``/``recv`` make
from tfteach.framework import registry
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.graph_io import node_to_dict
from tfteach.framework.registry import OpDef

SEND = "_Send"
RECV = "_Recv"
_ZERO_F32 = {"array": "AAAAAA==", "dtype": "<f4", "shape": []}   # float32 0.0, base64
_F32 = {"dtype": "float32"}
_SCALAR = {"shape": []}

@dataclass
class NodeDef:
    """One node of a graph def (see the module docstring)."""

    name: str
    op: str
    device: str
    input: list[str] = field(default_factory=list)
    attr: dict[str, Any] = field(default_factory=dict)
    colocation: list[str] = field(default_factory=list)
    carries_control: bool = False       # carries a control edge between tasks; not sent

    @classmethod
    def of(cls, op: Operation, device: str) -> "NodeDef":
        """``op`` as a node pinned to ``device``, without inputs or colocation (the
        partitioner sets the inputs of its part)."""
        node = node_to_dict(op, device)
        return cls(node["name"], node["op"], node["device"], attr=node["attr"])

    def to_dict(self) -> dict[str, Any]:
        """The graph def node (``graph_io``'s format) that goes on the wire."""
        return {"name": self.name, "op": self.op, "device": self.device,
                "input": list(self.input), "attr": self.attr,
                "colocation": list(self.colocation)}

    @property
    def op_def(self) -> OpDef:
        """What the registry knows about this node's op type (``copyable``, ``idle``...)."""
        return registry.get(self.op)

    @property
    def key(self) -> str:
        """The rendezvous key of a ``_Send`` or ``_Recv``."""
        return self.attr["key"]

    @property
    def sources(self) -> list[str]:
        """The names of the nodes this one takes an input or control input from."""
        return [source_of(name) for name in self.input]


def source_of(edge: str) -> str:
    """The node an input names: ``"x:1"`` and ``"^x"`` -> ``"x"``."""
    return edge[1:] if edge.startswith("^") else edge.rsplit(":", 1)[0]


def tensor_types(t: Tensor) -> tuple[dict, dict]:
    """A tensor's ``dtype`` and ``shape`` attrs, as a Placeholder or ``_Recv`` holds them."""
    return dtype_attr(t.dtype.name), shape_attr(t.shape.dims)


def dtype_attr(name: str) -> dict:
    return {"dtype": name}


def shape_attr(dims: Any) -> dict:
    return {"shape": None if dims is None else list(dims)}


def send(name: str, device: str, tensor: str, key: str, dtype: dict,
         carries_control: bool = False) -> NodeDef:
    """A ``_Send`` of ``tensor`` under rendezvous ``key`` (``dtype``: its dtype attr)."""
    return NodeDef(name, SEND, device, [tensor], {"key": key, "T": dtype},
                   carries_control=carries_control)


def recv(name: str, device: str, key: str, types: tuple[dict, dict], src_device: str,
         src_task: str, src_address: str, tensor: str,
         carries_control: bool = False) -> NodeDef:
    """A ``_Recv`` of ``tensor`` (``types``: its dtype and shape attrs) sent from
    ``src_device`` of task ``src_task`` (at ``src_address``; "" within the task)."""
    return NodeDef(name, RECV, device, [], {
        "key": key, "dtype": types[0], "shape": types[1], "src_device": src_device,
        "src_task": src_task, "src_address": src_address, "tensor": tensor},
        carries_control=carries_control)


def placeholder(name: str, device: str, dtype: dict, shape: dict) -> NodeDef:
    """A Placeholder the master feeds (a fed tensor, a carried value, a tensor sent)."""
    return NodeDef(name, "Placeholder", device, [], {"dtype": dtype, "shape": shape})


def control_const(name: str, device: str, after: str) -> NodeDef:
    """The dummy float32 scalar that runs after op ``after`` and is sent in place of a
    control edge to another task."""
    return NodeDef(name, "Const", device, [f"^{after}"],
                   {"value": _ZERO_F32, "dtype": dict(_F32)}, carries_control=True)


def control_types() -> tuple[dict, dict]:
    """The dtype and shape attrs of ``control_const``'s value."""
    return dict(_F32), dict(_SCALAR)
