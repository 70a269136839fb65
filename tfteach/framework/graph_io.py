"""Graphs as data: ``graph_to_dict`` / ``graph_from_dict`` (our GraphDef), JSON-safe.

A graph def is ``{"version": 1, "node": [node, ...]}`` with nodes in topological order; each
node is ``{"name", "op", "device", "input": ["x:0", "^ctl"], "attr": {...}, "colocation": [...]}``.
Attr values are JSON-safe: dtypes as ``{"dtype": "float32"}``, shapes as ``{"shape": [..] |
null}``, arrays as ``{"array": base64, "dtype", "shape"}``, plus plain numbers, strings, bools
and lists. No pickle anywhere: a graph received over the network is only data.

Importing recreates ops with ``Graph.create_op`` under their exact names, requested devices
and colocation, so a worker runs the very graph the client built. A graph def may come from
anyone: importing checks every node first (fields of the right types, a unique name, inputs
naming earlier nodes' existing outputs (later ones only for a while loop's back edges: a
NextIteration into its Merge, a gradient's history push into its counter), known attr
encodings, dtypes, shapes without negative or absurd dimensions) and raises ValueError
naming the node and the field. A failed
import into an existing graph may leave the nodes before the bad one: import into a copy
(``copy_graph``) to keep the original intact.
"""
from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any, Iterable

import numpy as np

from tfteach.framework import dtypes
from tfteach.framework.device_spec import DeviceSpec
from tfteach.framework.graph import Graph, Operation
from tfteach.framework.tensor_shape import TensorShape

VERSION = 1
MAX_ELEMENTS = 1 << 48      # no tensor a task can hold has more: a larger shape is absurd
_ARRAY_KINDS = "biufc"      # numeric and bool arrays travel as raw bytes


def encode_attr(v: Any) -> Any:
    """An attr value (DType, TensorShape, array, list, number, str) in the JSON-safe encoding."""
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
        return {"list": [encode_attr(x) for x in v]}
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return v.item()
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"Cannot serialize attr value {v!r} of type {type(v).__name__}")


def decode_attr(v: Any) -> Any:
    """The attr value ``encode_attr`` encoded (ValueError for an unknown encoding)."""
    if not isinstance(v, dict):
        return v
    if "dtype" in v and len(v) == 1:
        return dtypes.as_dtype(v["dtype"])
    if "shape" in v and len(v) == 1:
        return checked_shape(v["shape"])
    if "array" in v:
        return _decode_array(v)
    if "strings" in v:
        strings, shape = v["strings"], _array_shape(v["shape"])
        if not all(isinstance(x, str) for x in strings) or len(strings) != math.prod(shape):
            raise ValueError(f"a strings attr holds {len(strings)} strings, not {shape}")
        return np.array(strings, dtype=object).reshape(shape)
    if "list" in v and isinstance(v["list"], list):
        return [decode_attr(x) for x in v["list"]]
    raise ValueError(f"Unknown attr encoding: {sorted(v)}")


def _decode_array(v: dict) -> np.ndarray:
    dtype, shape = np.dtype(v["dtype"]), _array_shape(v["shape"])
    if dtype.kind not in _ARRAY_KINDS:
        raise ValueError(f"an array attr of dtype {dtype} cannot be sent")
    data = base64.b64decode(v["array"], validate=True)
    if len(data) != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"an array attr of {len(data)} bytes does not hold {dtype}{shape}")
    arr = np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    arr.setflags(write=False)
    return arr


def _array_shape(dims: Any) -> list[int]:
    if not isinstance(dims, list) or not all(_is_int(d) and d >= 0 for d in dims):
        raise ValueError(f"an array's shape is a list of dimensions >= 0, not {dims!r}")
    return checked_shape(dims).as_list()


def _is_int(d: Any) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)


def checked_shape(dims: Any) -> TensorShape:
    """``TensorShape(dims)`` for a shape received as data: None, or a list of ints >= -1 or
    None; ValueError for anything else, or for more than ``MAX_ELEMENTS`` elements (a 0
    dimension counted as 1: ``[0, 2**62]`` is as absurd as ``[2**62]``)."""
    if dims is not None and (not isinstance(dims, list) or
                             not all(d is None or _is_int(d) for d in dims)):
        raise ValueError(f"a shape is null or a list of ints (-1 or null: unknown), "
                         f"not {dims!r}")
    shape = TensorShape(dims)
    check_size(shape)
    return shape


def check_size(shape: TensorShape) -> None:
    """ValueError if ``shape``'s known dimensions make more than ``MAX_ELEMENTS``."""
    known = [d for d in shape.dims or () if d]
    if math.prod(known) > MAX_ELEMENTS:
        raise ValueError(f"Shape {shape} is too large (more than 2**48 entries, counting "
                         "unknown and 0 dimensions as 1)")


def node_to_dict(op: Operation, device: str | None = None) -> dict:
    return {"name": op.name, "op": op.type,
            "device": op.device if device is None else device,
            "input": [t.name for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs],
            "attr": {k: encode_attr(v) for k, v in op.attrs.items()},
            "colocation": list(op._colocation)}


def graph_to_dict(ops: Iterable[Operation], devices: dict | None = None) -> dict:
    """Serialize ``ops`` (topological order); ``devices`` can override requested devices."""
    devices = devices or {}
    return {"version": VERSION, "node": [node_to_dict(op, devices.get(op.name)) for op in ops]}


def graph_to_json(ops: Iterable[Operation], devices: dict | None = None) -> bytes:
    return json.dumps(graph_to_dict(ops, devices)).encode()


def graph_from_dict(gdef: dict, graph: Graph | None = None) -> Graph:
    """Rebuild a graph (or extend ``graph``) from a graph def; names are kept exactly.
    Raises ValueError, naming the node and field, for a malformed graph def."""
    if not isinstance(gdef, dict) or not isinstance(gdef.get("node"), list):
        raise ValueError("Malformed graph def: expected {'version': 1, 'node': [...]}")
    if gdef.get("version") != VERSION:
        raise ValueError(f"Unsupported graph def version {gdef.get('version')!r}")
    g = graph or Graph()
    later = _names(gdef["node"], g)
    back_edges: list = []
    for node in gdef["node"]:
        later.discard(node["name"])
        _import_node(g, node, later, back_edges)
    for op, i, node, ref in back_edges:
        t = _input(g, node, ref, set())
        source = t if isinstance(t, Operation) else t.op
        if source.op_def.extra.get("flow") != _LATER_ROLES[isinstance(t, Operation)]:
            raise _bad(node, "input", f"input {ref!r} names a node that comes later in the "
                                      "graph def (a cycle, or nodes out of topological order)")
        if isinstance(t, Operation):
            g._add_control_input(op, t)
        else:
            g._update_input(op, i, t)
    for node in gdef["node"]:
        missing = [c for c in node.get("colocation", []) if c not in g._by_name]
        if missing:
            raise _bad(node, "colocation", f"names no node of the graph: {missing[0]!r}")
    g.validate()
    return g


def graph_from_json(data: bytes, graph: Graph | None = None) -> Graph:
    try:
        gdef = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"Malformed graph def: {e}") from None
    return graph_from_dict(gdef, graph)


def copy_graph(graph: Graph) -> Graph:
    """A new graph with ``graph``'s ops (names, devices, attrs, colocation)."""
    return graph_from_dict(graph_to_dict(graph.get_operations()))


_FIELDS = {"name": str, "op": str, "device": str, "input": list, "attr": dict,
           "colocation": list}


def _bad(node: Any, field: str, problem: str) -> ValueError:
    name = node.get("name") if isinstance(node, dict) else None
    return ValueError(f"NodeDef {name!r}, field '{field}': {problem}")


def _names(nodes: list, g: Graph) -> set[str]:
    """The names of ``nodes``, each checked: a dict of well-typed fields, its name new."""
    names: set[str] = set()
    for node in nodes:
        if not isinstance(node, dict):
            raise ValueError(f"Malformed graph def: a node is a dict, not {node!r:.80}")
        for field, kind in _FIELDS.items():
            if (field in node or field in ("name", "op")) and \
                    not isinstance(node.get(field), kind):
                raise _bad(node, field, f"expected a {kind.__name__}, got "
                                        f"{node.get(field)!r:.80}")
        if not node["name"] or node["name"].startswith("^"):
            raise _bad(node, "name", "a node name is not empty and does not start with '^'")
        if node["name"] in names or node["name"] in g._by_name:
            raise _bad(node, "name", f"Node '{node['name']}' is not unique")
        if not all(isinstance(x, str) for x in node.get("input", []) +
                   node.get("colocation", [])):
            raise _bad(node, "input", "inputs and colocation names are strings")
        names.add(node["name"])
    return names


def _input(g: Graph, node: dict, ref: str, later: set[str]) -> Any:
    """The op (``^name``) or tensor (``name:index``) that ``ref`` names in ``g``."""
    control = ref.startswith("^")
    name, index = ref[1:], ""
    if not control:
        name, _, index = ref.rpartition(":")
        if not name or not index.isdigit():
            raise _bad(node, "input", f"input {ref!r} is not of the form 'node:index'")
    if name in later or name == node["name"]:
        raise _bad(node, "input", f"input {ref!r} names a node that comes later in the graph "
                                  "def (a cycle, or nodes out of topological order)")
    if name not in g._by_name:
        raise _bad(node, "input", f"Unknown input node {ref!r}")
    op = g._by_name[name]
    if control:
        return op
    if int(index) >= len(op.outputs):
        raise _bad(node, "input", f"Connecting to invalid output {index} of source node "
                                  f"{name} which has {len(op.outputs)} outputs")
    return op.outputs[int(index)]


def _import_node(g: Graph, node: dict, later: set[str], back_edges: list) -> Operation:
    refs = [ref if _back_edge(node, ref, later) else _input(g, node, ref, later)
            for ref in node.get("input", [])]
    inputs = [r for r in refs if not isinstance(r, (Operation, str))]
    loops = [(i, r) for i, r in enumerate(refs) if isinstance(r, str)]
    if loops and not inputs:
        raise _bad(node, "input", "a Merge needs an input from before it")
    for i, ref in loops:    # a loop's back edge: the Merge is built on its first input, as
        if not ref.startswith("^"):    # TF builds it, and the edge is set after the import
            inputs.insert(i, inputs[0])
    if len(inputs) != len(refs) - sum(r.startswith("^") for r in node.get("input", [])):
        raise _bad(node, "input", "control inputs ('^name') come after the data inputs")
    try:
        attrs = {k: decode_attr(v) for k, v in node.get("attr", {}).items()}
    except (ValueError, TypeError, KeyError, OverflowError, binascii.Error) as e:
        raise _bad(node, "attr", str(e)) from None
    device = node.get("device", "")
    try:
        DeviceSpec.from_string(device)
    except ValueError as e:
        raise _bad(node, "device", str(e)) from None
    try:
        op = g.create_op(node["op"], inputs, attrs, name=node["name"] + "/")
    except Exception as e:  # noqa: BLE001 (any failure of untrusted data is its fault)
        text = e.args[0] if isinstance(e, KeyError) and e.args else e
        raise _bad(node, "op", f"cannot create a {node['op']} op from these inputs and "
                               f"attrs: {type(e).__name__}: {text}") from None
    _check_outputs(op, node)
    op._device = device
    op._colocation = list(node.get("colocation", []))
    for c in refs:
        if isinstance(c, Operation):
            g._add_control_input(op, c)
    key = node["name"].lower()
    g._names_in_use[key] = max(1, g._names_in_use.get(key, 0))
    back_edges.extend((op, i, node, ref) for i, ref in loops)
    return op


# Nodes that may come after a node that uses them: a while loop's NextIteration (data, into
# its Merge) and a loop gradient's history push (control, into the loop's counter).
_LATER_ROLES = {False: "next", True: "history"}


def _back_edge(node: dict, ref: str, later: set[str]) -> bool:
    """Whether ``ref`` names a later node that may be one of ``_LATER_ROLES`` (checked once
    it is imported)."""
    if ref.startswith("^"):
        return ref[1:] in later
    return node["op"] == "Merge" and ref.rpartition(":")[0] in later


def _check_outputs(op: Operation, node: dict) -> None:
    """Outputs of real dtypes and sane shapes; a Const's value of its dtype."""
    for t in op.outputs:
        if not isinstance(t.dtype, dtypes.DType):
            raise _bad(node, "attr", f"output {t.value_index} has no valid dtype: {t.dtype!r}")
        try:
            check_size(t.shape)
        except ValueError as e:
            raise _bad(node, "attr", str(e)) from None
    value, dtype = op.attrs.get("value"), op.attrs.get("dtype")
    if isinstance(value, np.ndarray) and value.dtype != object and \
            isinstance(dtype, dtypes.DType) and dtypes.as_dtype(value.dtype) != dtype:
        raise _bad(node, "attr", f"value of dtype {value.dtype} does not match dtype "
                                 f"{dtype.name}")
