"""Graphs as data: ``graph_to_dict`` / ``graph_from_dict`` (our GraphDef), JSON-safe.

A graph def is ``{"version": 1, "node": [node, ...]}`` with nodes in topological order; each
node is ``{"name", "op", "device", "input": ["x:0", "^ctl"], "attr": {...}, "colocation": [...]}``.
Attr values are JSON-safe: dtypes as ``{"dtype": "float32"}``, shapes as ``{"shape": [..] |
null}``, arrays as ``{"array": base64, "dtype", "shape"}``, plus plain numbers, strings, bools
and lists. No pickle anywhere: a graph received over the network is only data.

Importing recreates ops with ``Graph.create_op`` under their exact names, requested devices
and colocation, so a worker runs the very graph the client built.
"""
from __future__ import annotations

import base64
import json
from typing import Any, Iterable

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.graph import Graph, Operation
from tfteach.framework.tensor_shape import TensorShape

VERSION = 1


def _encode_attr(v: Any) -> Any:
    if isinstance(v, dtypes.DType):
        return {"dtype": v.name}
    if isinstance(v, TensorShape):
        return {"shape": None if v.dims is None else list(v.dims)}
    if isinstance(v, np.ndarray):
        if v.dtype == object:
            return {"strings": [x.decode() if isinstance(x, bytes) else str(x) for x in v.ravel()],
                    "shape": list(v.shape)}
        return {"array": base64.b64encode(np.ascontiguousarray(v).tobytes()).decode(),
                "dtype": v.dtype.str, "shape": list(v.shape)}
    if isinstance(v, (list, tuple)):
        return {"list": [_encode_attr(x) for x in v]}
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"Cannot serialize attr value {v!r} of type {type(v).__name__}")


def _decode_attr(v: Any) -> Any:
    if not isinstance(v, dict):
        return v
    if "dtype" in v and len(v) == 1:
        return dtypes.as_dtype(v["dtype"])
    if "shape" in v and len(v) == 1:
        return TensorShape(v["shape"])
    if "array" in v:
        arr = np.frombuffer(base64.b64decode(v["array"]), dtype=np.dtype(v["dtype"]))
        arr = arr.reshape(v["shape"]).copy()
        arr.setflags(write=False)
        return arr
    if "strings" in v:
        return np.array(v["strings"], dtype=object).reshape(v["shape"])
    if "list" in v:
        return [_decode_attr(x) for x in v["list"]]
    raise ValueError(f"Unknown attr encoding: {sorted(v)}")


def node_to_dict(op: Operation, device: str | None = None) -> dict:
    return {"name": op.name, "op": op.type,
            "device": op.device if device is None else device,
            "input": [t.name for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs],
            "attr": {k: _encode_attr(v) for k, v in op.attrs.items()},
            "colocation": list(op._colocation)}


def graph_to_dict(ops: Iterable[Operation], devices: dict | None = None) -> dict:
    """Serialize ``ops`` (topological order); ``devices`` can override requested devices."""
    devices = devices or {}
    return {"version": VERSION, "node": [node_to_dict(op, devices.get(op.name)) for op in ops]}


def graph_to_json(ops: Iterable[Operation], devices: dict | None = None) -> bytes:
    return json.dumps(graph_to_dict(ops, devices)).encode()


def graph_from_dict(gdef: dict, graph: Graph | None = None) -> Graph:
    """Rebuild a graph (or extend ``graph``) from a graph def; names are kept exactly."""
    if gdef.get("version") != VERSION:
        raise ValueError(f"Unsupported graph def version {gdef.get('version')!r}")
    g = graph or Graph()
    for node in gdef["node"]:
        _import_node(g, node)
    return g


def graph_from_json(data: bytes, graph: Graph | None = None) -> Graph:
    try:
        gdef = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"Malformed graph def: {e}") from None
    if not isinstance(gdef, dict) or not isinstance(gdef.get("node"), list):
        raise ValueError("Malformed graph def: expected {'version': 1, 'node': [...]}")
    return graph_from_dict(gdef, graph)


def _import_node(g: Graph, node: dict) -> Operation:
    if node["name"] in g._by_name:
        return g._by_name[node["name"]]
    inputs, controls = [], []
    for ref in node.get("input", []):
        if ref.startswith("^"):
            controls.append(g.get_operation_by_name(ref[1:]))
        else:
            inputs.append(g.get_tensor_by_name(ref))
    attrs = {k: _decode_attr(v) for k, v in node.get("attr", {}).items()}
    op = g.create_op(node["op"], inputs, attrs, name=node["name"] + "/")
    op._device = node.get("device", "")
    op._colocation = list(node.get("colocation", []))
    for c in controls:
        g._add_control_input(op, c)
    g._names_in_use[node["name"]] = max(1, g._names_in_use.get(node["name"], 0))
    return op
