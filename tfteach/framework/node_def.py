"""tfteach's one graph IR: ``NodeDef`` and ``GraphDef``, the nodes of a graph as data.

Every graph that tfteach describes node by node uses them: the parts of a step the cluster
master cuts per task and registers with the workers, the partition graphs of
``RunMetadata`` (a local session's and a cluster's), and the partition graphs real
TensorFlow reports to the TensorFlow bridge (read with ``GraphDef.from_proto``).

A ``NodeDef`` holds ``name``, ``op`` (the op type), ``device``, ``input`` (``"x"``,
``"x:1"``, or ``"^x"`` for a control input), ``attr`` and ``colocation`` (the names of the
ops it is colocated with). Attr values are in ``graph_io``'s JSON-safe encoding (a dtype is
``{"dtype": "float32"}``, a shape ``{"shape": [2, None]}``, strings, numbers and bools as
they are), so a node goes on the wire as it is. ``carries_control`` is a mark of the
cluster master's (the node carries a control edge between tasks); it is never serialized.

Two serializations, both lossless for what tfteach writes:

- ``to_dict``/``from_dict``: ``graph_io``'s graph def, ``{"version": 1, "node": [...]}``, the
  very dict RegisterGraph sends;
- ``to_proto``/``from_proto``: TF's ``GraphDef``/``NodeDef`` protobuf (``graph_def``;
  colocation as TF's ``_class: ["loc:@x"]``). ``from_proto`` takes TF's own messages too;
  attrs tfteach cannot hold (a dtype it lacks, a function) are left out.

``tf.GraphDef`` and ``tf.NodeDef`` (and ``op.node_def``) are TF's protobuf messages, as in TF.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfteach.framework import graph_def as tf_format
from tfteach.framework import registry
from tfteach.framework.graph import Operation
from tfteach.framework.graph_io import VERSION, decode_attr, encode_attr, node_to_dict
from tfteach.framework.registry import OpDef

_LOC = "loc:@"
_FIELDS = ("name", "op", "device", "input", "attr", "colocation")


@dataclass
class NodeDef:
    """One node of a graph (see the module docstring)."""

    name: str = ""
    op: str = ""
    device: str = ""
    input: list[str] = field(default_factory=list)
    attr: dict[str, Any] = field(default_factory=dict)
    colocation: list[str] = field(default_factory=list)
    carries_control: bool = False       # the master's mark; never serialized

    @classmethod
    def of(cls, op: Operation, device: str | None = None) -> "NodeDef":
        """``op`` as a node (on ``device``, else its requested device), without inputs
        or colocation: whoever cuts a graph into parts sets the inputs of each part."""
        node = node_to_dict(op, device)
        return cls(node["name"], node["op"], node["device"], attr=node["attr"])

    @property
    def op_def(self) -> OpDef:
        """What the registry knows about this node's op type (``copyable``, ``idle``...)."""
        return registry.get(self.op)

    @property
    def key(self) -> str:
        """The rendezvous key of a cluster step's ``_Send`` or ``_Recv``."""
        return self.attr["key"]

    @property
    def sources(self) -> list[str]:
        """The names of the nodes this one takes an input or control input from."""
        return [source_of(name) for name in self.input]

    def to_dict(self) -> dict[str, Any]:
        """The node in ``graph_io``'s format (what goes on the wire)."""
        return {"name": self.name, "op": self.op, "device": self.device,
                "input": list(self.input), "attr": self.attr,
                "colocation": list(self.colocation)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "NodeDef":
        """From ``graph_io``'s node dict (keys it lacks take their defaults)."""
        return cls(**{k: d[k] for k in _FIELDS if k in d})

    def to_proto(self) -> Any:
        """The node as TF's ``NodeDef`` message."""
        node = tf_format.NodeDef(name=self.name, op=self.op, device=self.device)
        node.input.extend(self.input)
        for key, value in sorted(self.attr.items()):
            if value is not None:
                node.attr[key].CopyFrom(tf_format.attr_value(decode_attr(value)))
        if self.colocation:
            node.attr["_class"].CopyFrom(
                tf_format.attr_value([_LOC + name for name in self.colocation]))
        return node

    @classmethod
    def from_proto(cls, node: Any) -> "NodeDef":
        """From a ``NodeDef`` message (tfteach's or TF's)."""
        attr, colocation = {}, []
        for key, value in node.attr.items():
            try:
                decoded = tf_format.attr_from_proto(value)
            except ValueError:
                continue        # a kind tfteach cannot hold (module docstring)
            if key == "_class":
                colocation = [c[len(_LOC):] for c in decoded if c.startswith(_LOC)]
            else:
                attr[key] = encode_attr(decoded)
        return cls(node.name, node.op, node.device, list(node.input), attr, colocation)


@dataclass
class GraphDef:
    """The nodes of a graph (or of one partition of a step), in topological order."""

    node: list[NodeDef] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``graph_io``'s graph def: ``{"version": 1, "node": [...]}``."""
        return {"version": VERSION, "node": [n.to_dict() for n in self.node]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "GraphDef":
        return cls([NodeDef.from_dict(n) for n in d.get("node", [])])

    def to_proto(self) -> Any:
        """TF's ``GraphDef`` message of these nodes."""
        out = tf_format.GraphDef(versions=tf_format.pb.VersionDef(producer=tf_format.PRODUCER))
        out.node.extend(n.to_proto() for n in self.node)
        return out

    @classmethod
    def from_proto(cls, graph_def: Any) -> "GraphDef":
        """From a ``GraphDef`` message (tfteach's or TF's) or its bytes."""
        return cls([NodeDef.from_proto(n)
                    for n in tf_format.as_graph_def_proto(graph_def).node])

    def SerializeToString(self) -> bytes:  # noqa: N802 (protobuf's name)
        """The bytes of TF's ``GraphDef`` message, as TF's ``RunMetadata`` graphs give."""
        return self.to_proto().SerializeToString()


def source_of(edge: str) -> str:
    """The node an input names: ``"x:1"`` and ``"^x"`` -> ``"x"``."""
    return edge[1:] if edge.startswith("^") else edge.rsplit(":", 1)[0]
