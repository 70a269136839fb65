"""Graphs as TensorFlow ``GraphDef`` protobufs: ``as_graph_def``, ``import_graph_def``,
``write_graph``.

``as_graph_def(graph)`` gives a ``GraphDef`` message (``tfteach.framework.protos``) with
TF's field names and numbers, so its bytes are a ``tensorflow.GraphDef``: one ``NodeDef``
per op (name, op type, inputs as ``"x"``/``"x:1"``/``"^ctl"``, requested device, attrs),
attrs as ``AttrValue`` (a dtype as ``type``, a shape as ``shape``, an array as a
``TensorProto``, colocation as TF's ``_class: ["loc:@name"]``), ``versions.producer`` set.
Where tfteach keeps an op differently from TF, the export writes TF's form:

- attrs TF infers from input types are filled in (``Tidx`` of reductions, ``Tshape`` of
  Reshape, ``out_type`` of Shape, ...); tfteach-only attrs are left out (``keep_dims`` of
  ArgMax, ``T`` of the logical ops);
- ``OneHot`` keeps ``depth`` as an attr in tfteach but takes it as an input in TF: the
  export adds a ``<name>/depth`` Const node and the import reads it back from one.

Import does the reverse for a GraphDef from tfteach or TF (TF's message, ours, or its
bytes), for the op types tfteach has, under a name scope (``import/`` by default), with
``input_map`` and ``return_elements`` as in TF. Attrs TF has and tfteach does not use
(e.g. ``Truncate`` of Cast) are kept on the op, so a graph goes back out as it came in.
Ops that TF lacks (tfteach's internal ``_AccumulatorCancelTakes``) are written as they
are; TF cannot import them.

To hand a GraphDef to TF's own API, reparse its bytes:
``tf.compat.v1.GraphDef.FromString(graph_def.SerializeToString())``.

``GraphDef``/``NodeDef`` here are TF's protobuf messages (``tf.GraphDef``, ``op.node_def``);
tfteach's own graph IR is ``node_def``'s records, which convert to and from them.
"""
from __future__ import annotations

import os
import secrets
from typing import Any, Iterable, Mapping

import numpy as np

from tfteach.errors import NotFoundError, with_hint
from tfteach.i18n import tr
from tfteach.framework import dtypes, registry, tensor_proto
from tfteach.framework.graph import (Graph, Operation, Tensor, get_default_graph,
                                     register_graph_def_writer)
from tfteach.framework.protos import tfteach_tf_formats_pb2 as pb
from tfteach.framework.tensor_shape import TensorShape

GraphDef = pb.GraphDef
NodeDef = pb.NodeDef
PRODUCER = 27   # GraphDef version written: TF 1.x's era; any TF since 1.0 imports it

# Type attrs TF infers from an input (index) or an output ("out", index) of the op.
_TYPE_FROM = {**{op: ("Tidx", 1) for op in ("Sum", "Mean", "Max", "Min", "Prod", "ArgMax",
                                             "ArgMin")},
              "ConcatV2": ("Tidx", -1), "ExpandDims": ("Tdim", 1), "Fill": ("index_type", 0),
              "Reshape": ("Tshape", 1), "Tile": ("Tmultiples", 1), "Transpose": ("Tperm", 1),
              "Shape": ("out_type", ("out", 0)), "Size": ("out_type", ("out", 0))}
_TFTEACH_ONLY = {"ArgMax": {"keep_dims"}, "ArgMin": {"keep_dims"}, "LogicalAnd": {"T"},
                 "LogicalOr": {"T"}, "LogicalNot": {"T"}}
_IMPORT_DEFAULTS = {"LogicalAnd": {"T": dtypes.bool_}, "LogicalOr": {"T": dtypes.bool_},
                    "LogicalNot": {"T": dtypes.bool_}}
_DTYPE_OF_ENUM = {getattr(pb, d.enum): d for d in (*dtypes.ALL, dtypes.resource)}


# ---------------------------------------------------------------- attrs

def attr_value(value: Any) -> pb.AttrValue:
    """A tfteach attr value (DType, TensorShape, array, bool, int, float, str, list) as TF's
    ``AttrValue``."""
    out = pb.AttrValue()
    if isinstance(value, (list, tuple)):
        out.list.SetInParent()
        for item in value:
            _add_to_list(out.list, item)
    elif isinstance(value, dtypes.DType):
        out.type = getattr(pb, value.enum)
    elif isinstance(value, TensorShape):
        out.shape.SetInParent()          # a scalar's shape is an empty, present message
        tensor_proto.shape_proto(value, out.shape)
    elif isinstance(value, np.ndarray):
        out.tensor.CopyFrom(tensor_proto.make_tensor_proto(value))
    elif isinstance(value, (bool, np.bool_)):
        out.b = bool(value)
    elif isinstance(value, (int, np.integer)):
        out.i = int(value)
    elif isinstance(value, (float, np.floating)):
        out.f = float(value)
    elif isinstance(value, (str, bytes)):
        out.s = value.encode() if isinstance(value, str) else value
    else:
        raise TypeError(f"Cannot write attr value {value!r} of type {type(value).__name__} "
                        "into a GraphDef")
    return out


def _add_to_list(out: pb.AttrValue.ListValue, item: Any) -> None:
    single = attr_value(item)
    kind = single.WhichOneof("value")
    if kind in ("type", "b", "i", "f", "s"):
        getattr(out, kind).append(getattr(single, kind))
    elif kind in ("shape", "tensor"):
        getattr(out, kind).add().CopyFrom(getattr(single, kind))
    else:
        raise TypeError(f"Cannot write a list holding {item!r} into a GraphDef")


def attr_from_proto(value: pb.AttrValue) -> Any:
    """The tfteach value of a TF ``AttrValue`` (ValueError for kinds tfteach lacks)."""
    kind = value.WhichOneof("value")
    if kind == "list":
        fields = value.list.ListFields()
        return [_scalar_attr(kind.name, x) for kind, items in fields for x in items]
    if kind is None:
        return []
    return _scalar_attr(kind, getattr(value, kind))


def _scalar_attr(kind: str, x: Any) -> Any:
    if kind == "type":
        if x not in _DTYPE_OF_ENUM:
            raise ValueError(f"tfteach has no dtype {tensor_proto.datatype_name(x)}")
        return _DTYPE_OF_ENUM[x]
    if kind == "shape":
        return tensor_proto.shape_from_proto(x)
    if kind == "tensor":
        array = tensor_proto.to_ndarray(x)
        array.setflags(write=False)
        return array
    if kind == "s":
        return x.decode("utf-8", errors="surrogateescape")
    if kind in ("i", "f", "b"):
        return x
    raise ValueError(f"attr values of kind '{kind}' (functions, placeholders) are not "
                     "supported by tfteach")


# ---------------------------------------------------------------- export

def _input_name(t: Tensor) -> str:
    return t.op.name if t.value_index == 0 else t.name


def _tf_attrs(op: Operation) -> dict[str, Any]:
    """The op's attrs as TF has them: inferred type attrs added, tfteach-only ones left out."""
    attrs = {k: v for k, v in op.attrs.items()
             if k not in _TFTEACH_ONLY.get(op.type, ()) and v is not None}
    if op.type in _TYPE_FROM:
        name, where = _TYPE_FROM[op.type]
        t = op.outputs[where[1]] if isinstance(where, tuple) else op.inputs[where]
        attrs.setdefault(name, t.dtype)
    if op._colocation:
        attrs["_class"] = [f"loc:@{n}" for n in op._colocation]
    return attrs


def _node(op: Operation, device: str | None, add_shapes: bool) -> pb.NodeDef:
    node = pb.NodeDef(name=op.name, op=op.type, device=op.device if device is None else device)
    node.input.extend([_input_name(t) for t in op.inputs] +
                      [f"^{c.name}" for c in op.control_inputs])
    for key, value in sorted(_tf_attrs(op).items()):
        node.attr[key].CopyFrom(attr_value(value))
    if add_shapes:
        node.attr["_output_shapes"].CopyFrom(attr_value([t.shape for t in op.outputs]))
    return node


def _one_hot_nodes(op: Operation, node: pb.NodeDef,
                   ops: dict[str, Operation]) -> list[pb.NodeDef]:
    """TF's OneHot takes ``depth`` as an input: a Const node ``<name>/depth`` gives it (one
    already there, e.g. from an import of TF's graph, is used as it is)."""
    depth_name, value = f"{op.name}/depth", np.int32(op.attrs["depth"])
    existing = ops.get(depth_name)
    reuse = existing is not None and existing.type == "Const" and \
        np.array_equal(existing.attrs.get("value"), value)
    while not reuse and depth_name in ops:
        depth_name += "_"
    node.input.insert(1, depth_name)
    for key in ("depth", "dtype"):
        del node.attr[key]
    node.attr["T"].type = getattr(pb, op.attrs["dtype"].enum)
    node.attr["TI"].type = getattr(pb, op.inputs[0].dtype.enum)
    node.attr["axis"].i = -1
    if reuse:
        return [node]
    ops[depth_name] = op
    depth = pb.NodeDef(name=depth_name, op="Const", device=node.device)
    depth.attr["dtype"].type = pb.DT_INT32
    depth.attr["value"].tensor.CopyFrom(tensor_proto.make_tensor_proto(value))
    return [depth, node]


def as_graph_def(ops: Graph | Iterable[Operation], devices: Mapping[str, str] | None = None,
                 add_shapes: bool = False) -> pb.GraphDef:
    """TF's GraphDef of a graph (or of ``ops``, in topological order).

    ``devices`` (op name -> device) overrides requested devices, e.g. with the devices a
    session placed the ops on; ``add_shapes`` adds each op's ``_output_shapes``.
    """
    ops = ops.get_operations() if isinstance(ops, Graph) else list(ops)
    devices = devices or {}
    by_name = {op.name: op for op in ops}
    graph_def = pb.GraphDef(versions=pb.VersionDef(producer=PRODUCER))
    for op in ops:
        node = _node(op, devices.get(op.name), add_shapes)
        nodes = _one_hot_nodes(op, node, by_name) if op.type == "OneHot" else [node]
        graph_def.node.extend(nodes)
    return graph_def


register_graph_def_writer(as_graph_def)


# ---------------------------------------------------------------- import

def as_graph_def_proto(graph_def: Any) -> pb.GraphDef:
    """Our GraphDef message of ``graph_def``: ours, TF's (any GraphDef message) or bytes."""
    if isinstance(graph_def, pb.GraphDef):
        return graph_def
    if isinstance(graph_def, (bytes, bytearray)):
        data = bytes(graph_def)
    elif hasattr(graph_def, "SerializeToString"):
        data = graph_def.SerializeToString()
    else:
        raise TypeError(with_hint(
            f"graph_def must be a GraphDef proto, not {type(graph_def).__name__}.",
            tr("pass graph.as_graph_def(), TF's GraphDef, or its bytes.")))
    try:
        return pb.GraphDef.FromString(data)
    except Exception as err:  # noqa: BLE001 (protobuf's DecodeError differs by backend)
        raise ValueError(f"graph_def is not a serialized GraphDef: {err}") from None


def _ref(ref: str) -> tuple[str, int | None]:
    """(node name, output index) of an input: ``x`` is ``x:0``; ``^x`` has index None."""
    if ref.startswith("^"):
        return ref[1:], None
    name, colon, index = ref.rpartition(":")
    return (name, int(index)) if colon and index.isdigit() else (ref, 0)


def _key(name: str, index: int | None) -> str:
    return f"^{name}" if index is None else f"{name}:{index}"


def _topological(nodes: list[pb.NodeDef], mapped: Mapping[str, Any]) -> list[pb.NodeDef]:
    """``nodes`` with every node after its inputs (ValueError: a cycle or a missing input)."""
    by_name = {n.name: n for n in nodes}
    if len(by_name) != len(nodes):
        raise ValueError("the GraphDef has two nodes of the same name")
    order, state = [], {}
    for root in nodes:
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                state[node.name] = "done"
                order.append(node)
                continue
            if state.get(node.name) == "done":
                continue
            if state.get(node.name) == "visiting":
                raise ValueError(f"the GraphDef has a cycle through node '{node.name}'")
            state[node.name] = "visiting"
            stack.append((node, True))
            for ref in node.input:
                name, index = _ref(ref)
                if _key(name, index) in mapped or _back_edge(node, ref, by_name):
                    continue
                if name not in by_name:
                    raise ValueError(f"Node '{node.name}': input '{ref}' is not in the "
                                     "GraphDef (nor in input_map)")
                if state.get(name) != "done":
                    stack.append((by_name[name], False))
    return order


def _back_edge(node: pb.NodeDef, ref: str, by_name: Mapping[str, pb.NodeDef]) -> bool:
    """A while loop's back edge, set after its source is imported: a NextIteration into
    its Merge, or a loop gradient's history push into the loop's counter (control)."""
    name, index = _ref(ref)
    source = by_name.get(name)
    if source is None:
        return False
    if index is None:
        return source.op == "LoopHistoryPush"
    return node.op == "Merge" and source.op == "NextIteration"


def _check_op_types(nodes: Iterable[pb.NodeDef]) -> None:
    for node in nodes:
        try:
            registry.get(node.op)
        except KeyError:
            raise NotFoundError(
                f"Op type not registered '{node.op}' in binary running on tfteach (node "
                f"'{node.name}').", hint=tr(
                    "tfteach imports GraphDefs of the op types it has: {types}. Run this "
                    "graph on real TensorFlow instead.", types=", ".join(
                        t for t in registry.registered_types() if not t.startswith("_")))
            ) from None


def import_graph_def(graph_def: Any, input_map: Mapping[str, Any] | None = None,
                     return_elements: Iterable[str] | None = None, name: str | None = None,
                     op_dict: Any = None, producer_op_list: Any = None) -> list | None:
    """Import a GraphDef into the default graph, under ``name`` (default ``import``; ``""``
    keeps the names). ``input_map`` maps GraphDef tensor names (``"x:0"``) to tensors of
    this graph; ``return_elements`` names the tensors (``"y:0"``) and ops (``"train"``)
    to return, in order."""
    gd = as_graph_def_proto(graph_def)
    g = get_default_graph()
    mapped = {_key(*_ref(k)): v for k, v in (input_map or {}).items()}
    nodes = _topological(list(gd.node), mapped)
    _check_op_types(nodes)
    unused = set(mapped) - {_key(*_ref(r)) for n in nodes for r in n.input}
    if unused:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: "
                         f"[{', '.join(sorted(unused))}]")
    scope = "" if name == "" else g.unique_name(name or "import") + "/"
    created: dict[str, Operation] = {}
    later: list = []
    with g.as_default():
        for node in nodes:
            created[node.name] = _import_node(g, node, scope, created, mapped, later)
    for op, position, name, index in later:
        if index is None:
            g._add_control_input(op, created[name])
        else:
            g._update_input(op, position, created[name].outputs[index])
    return None if return_elements is None else \
        [_element(created, ref, graph_def) for ref in return_elements]


def _element(created: Mapping[str, Operation], ref: str, graph_def: Any) -> Any:
    name, colon, index = ref.rpartition(":")
    if not colon:
        name, index = ref, None
    if name not in created or (index is not None and (not index.isdigit() or
                                                      int(index) >= len(created[name].outputs))):
        raise ValueError(f"Requested return_element {ref!r} not found in graph_def.")
    return created[name] if index is None else created[name].outputs[int(index)]


def _resolve(node: pb.NodeDef, created: Mapping[str, Operation], mapped: Mapping[str, Any],
             later: list) -> tuple[list[Tensor], list[Operation]]:
    """The inputs and control inputs of ``node``; a back edge (its source not imported yet)
    goes to ``later`` as (position, name, index), a Merge's standing in with its first
    input until then, as TF builds it."""
    inputs, controls = [], []
    for ref in node.input:
        name, index = _ref(ref)
        source = mapped.get(_key(name, index))
        if source is None and name not in created:
            later.append((len(inputs), name, index))
            if index is not None:
                inputs.append(None)
            continue
        if source is None:
            op = created[name]
            if index is not None and index >= len(op.outputs):
                raise ValueError(f"Node '{node.name}': Connecting to invalid output {index} of "
                                 f"source node {name} which has {len(op.outputs)} outputs")
            source = op if index is None else op.outputs[index]
        (controls if index is None else inputs).append(source)
    present = [t for t in inputs if t is not None]
    return [t if t is not None else present[0] for t in inputs], controls


def _import_node(g: Graph, node: pb.NodeDef, scope: str, created: Mapping[str, Operation],
                 mapped: Mapping[str, Any], later: list) -> Operation:
    edges: list = []
    inputs, controls = _resolve(node, created, mapped, edges)
    try:
        attrs = {k: attr_from_proto(v) for k, v in node.attr.items()
                 if k not in ("_class", "_output_shapes")}
    except ValueError as err:
        raise ValueError(f"Node '{node.name}': {err}") from None
    attrs = {**_IMPORT_DEFAULTS.get(node.op, {}), **attrs}
    if node.op == "OneHot":
        inputs, attrs = _one_hot_from_tf(node, inputs, attrs)
    if scope + node.name in g._by_name:
        raise ValueError(with_hint(
            f"Duplicate node name in graph: '{scope + node.name}'",
            tr("import under a name (import_graph_def(graph_def, name='imported')).")))
    try:
        op = g.create_op(node.op, inputs, attrs, name=scope + node.name + "/")
    except Exception as err:  # noqa: BLE001 (any failure of foreign data is its fault)
        raise ValueError(f"Node '{node.name}': cannot create a {node.op} op from these "
                         f"inputs and attrs: {type(err).__name__}: {err}") from None
    if node.device:
        op._set_device(node.device)
    classes = attr_from_proto(node.attr["_class"]) if "_class" in node.attr else []
    op._colocation = [scope + c[len("loc:@"):] for c in classes if c.startswith("loc:@")]
    for dep in controls:
        g._add_control_input(op, dep)
    g._names_in_use[op.name.lower()] = max(1, g._names_in_use.get(op.name.lower(), 0))
    later.extend((op, position, name, index) for position, name, index in edges)
    return op


def _one_hot_from_tf(node: pb.NodeDef, inputs: list[Tensor],
                     attrs: dict) -> tuple[list[Tensor], dict]:
    """TF's OneHot(indices, depth, on, off) as tfteach's OneHot(indices, on, off; depth)."""
    depth = inputs[1].op if len(inputs) == 4 else None
    if depth is None or depth.type != "Const" or attrs.get("axis", -1) != -1:
        raise ValueError(f"Node '{node.name}': tfteach imports a OneHot whose depth is a Const "
                         "and whose axis is -1")
    return [inputs[0], inputs[2], inputs[3]], {"depth": int(depth.attrs["value"]),
                                               "dtype": attrs["T"]}


# ---------------------------------------------------------------- files

def write_graph(graph_or_graph_def: Any, logdir: str, name: str, as_text: bool = True) -> str:
    """Write a graph's GraphDef to ``logdir/name`` (text format, or binary when not
    ``as_text``), atomically; returns the path. TF's ``tf.train.write_graph``."""
    from google.protobuf import text_format

    graph_def = as_graph_def(graph_or_graph_def) if isinstance(graph_or_graph_def, Graph) \
        else as_graph_def_proto(graph_or_graph_def)
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, name)
    data = text_format.MessageToString(graph_def).encode() if as_text else \
        graph_def.SerializeToString()
    temp = f"{path}.tmp{secrets.token_hex(4)}"
    with open(temp, "wb") as f:
        f.write(data)
    os.replace(temp, path)
    return path
