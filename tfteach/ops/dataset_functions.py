"""What ``tf.data`` transformations need besides ops: element structures and traced functions.

Element structures, as TF's ``nest``: a tuple or a dict (sorted by key) holds components, any
other value is one component (a Python list converts to one tensor, as in TF).
``flatten(structure)`` lists the leaves; ``pack(template, flat)`` rebuilds ``template``'s nesting.

A ``Function`` is what ``Dataset.map(fn)`` traces ``fn`` into: a ``FunctionGraph`` with one
``Placeholder`` per component (``args_0``, ``args_1``, ...), the ops ``fn`` built, and its
outputs. A tensor of an outer graph that ``fn`` uses is captured: it becomes a placeholder of
the function graph, and the dataset op takes it as an input (TF's ``Targuments``), so its value
is the one it had when the dataset op ran. ``Function.call`` runs the function's ops in the
order they were built, each with its registered kernel on the calling kernel's device; a kernel
that would wait (a queue) is UnimplementedError. Functions live in the outer graph's
``FUNCTIONS`` collection; a dataset op names its function in the attr ``f`` and carries its
definition in ``f_def`` (JSON: the function graph as ``graph_io`` writes graphs, and the names of
its inputs, captures and outputs), so a task that imported the graph rebuilds it on first use.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from tfteach import errors
from tfteach.framework.graph import Graph, Operation, Tensor
from tfteach.framework.graph_io import graph_from_dict, graph_to_dict
from tfteach.framework import nest
from tfteach.framework.kernel import Pending
from tfteach.i18n import tr
from tfteach.ops.array_ops import placeholder
from tfteach.ops.common import convert_to_tensor

FUNCTIONS = "_dataset_functions"


# ---- element structures ------------------------------------------------------------------
def flatten(structure: Any) -> list:
    """The leaves of an element ``structure`` (tuples in order, dicts by sorted key; a list is
    one value, as in tf.data)."""
    return nest.flatten(structure, (tuple,))


def pack(template: Any, flat: Sequence[Any]) -> Any:
    """``flat``'s values nested as the element ``template`` is (the inverse of ``flatten``)."""
    return nest.pack(template, flat, (tuple,))


def map_structure(fn: Callable, structure: Any) -> Any:
    return pack(structure, [fn(leaf) for leaf in flatten(structure)])


class Structured:
    """What datasets and iterators share: their elements' types and shapes (same nesting)."""

    _types: Any
    _shapes: Any
    output_types = property(lambda self: self._types)
    output_shapes = property(lambda self: self._shapes)
    output_classes = property(lambda self: map_structure(lambda _: Tensor, self._types))


# ---- tracing ---------------------------------------------------------------------------------
class FunctionGraph(Graph):
    """A graph ``fn`` is traced into; tensors of ``outer`` it uses become placeholders."""

    def __init__(self, outer: Graph) -> None:
        super().__init__()
        self.outer = outer
        self.seed = outer.seed
        self.captures: list[tuple[Tensor, Tensor]] = []     # (outer tensor, placeholder)

    def create_op(self, op_type: str, inputs: Sequence[Tensor], attrs: dict | None = None,
                  name: str | None = None) -> Operation:
        return super().create_op(op_type, [self.capture(t) for t in inputs], attrs, name)

    def capture(self, t: Any) -> Any:
        if not isinstance(t, Tensor) or t.graph is self:
            return t
        for outer, inner in self.captures:
            if outer is t:
                return inner
        with self.as_default():
            inner = placeholder(t.dtype, t.shape, name="captured")
        self.captures.append((t, inner))
        return inner


class Function:
    """A traced function: inputs (placeholders), captured outer tensors, outputs."""

    def __init__(self, name: str, graph: FunctionGraph, inputs: list[Tensor],
                 outputs: list[Tensor], structure: Any,
                 captured_inputs: list[Tensor] | None = None) -> None:
        self.name = name
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self.structure = structure      # the nesting of ``outputs``
        self.captured = [outer for outer, _ in graph.captures]
        self.captured_inputs = (captured_inputs if captured_inputs is not None
                                else [inner for _, inner in graph.captures])
        fed = set(inputs) | set(self.captured_inputs)
        self._ops = [op for op in graph.get_operations()
                     if not any(t in fed for t in op.outputs)]

    def definition(self) -> str:
        """What ``f_def`` holds: enough to rebuild this function in another process."""
        return json.dumps({"graph": graph_to_dict(self.graph.get_operations()),
                           "inputs": [t.name for t in self.inputs],
                           "captured": [t.name for t in self.captured_inputs],
                           "outputs": [t.name for t in self.outputs]})

    def call(self, env: Any, args: Sequence[Any], captured: Sequence[Any]) -> list:
        """Run the function on ``args`` (one value per input) on ``env``'s device."""
        values: dict[Tensor, Any] = dict(zip(self.inputs, args, strict=True))
        values.update(zip(self.captured_inputs, captured, strict=True))
        for op in self._ops:
            ins = [values[t].read(op) if t.is_ref and i not in op.op_def.ref_inputs
                   else values[t] for i, t in enumerate(op.inputs)]
            out = op.op_def.kernel(_CallContext(op, env, self.name), *ins)
            if isinstance(out, Pending):
                raise errors.UnimplementedError(
                    f"{op.type} '{op.name}' waits, which a function of a dataset cannot do",
                    hint=tr("build queues and accumulators outside Dataset.map, in the "
                            "main graph."))
            outs = (out,) if len(op.outputs) == 1 else (out or ())
            values.update(zip(op.outputs, outs, strict=True))
        return [values[t] for t in self.outputs]


class _CallContext:
    """The kernel context of an op inside a function (the caller's device and resources;
    random ops keep their generators under the function's name)."""

    __slots__ = ("attrs", "device", "op", "resources", "xp")

    def __init__(self, op: Operation, env: Any, prefix: str) -> None:
        self.op = op
        self.attrs = op.attrs
        self.device = env.device
        self.xp = env.device.xp
        self.resources = _PrefixedResources(env.resources, prefix)

    @property
    def deadline(self) -> float | None:
        return None


class _PrefixedResources:
    def __init__(self, base: Any, prefix: str) -> None:
        self._base = base
        self._prefix = prefix

    def rng(self, name: str, seed: int, seed2: int) -> Any:
        return self._base.rng(f"{self._prefix}/{name}", seed, seed2)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


def trace(fn: Callable, outer: Graph, types: Any, shapes: Any, what: str) -> Function:
    """Trace ``fn`` over elements of ``types``/``shapes`` (same nesting) into a Function."""
    g = FunctionGraph(outer)
    flat_types, flat_shapes = flatten(types), flatten(shapes)
    with g.as_default():
        args = [placeholder(dt, sh, name=f"args_{i}")
                for i, (dt, sh) in enumerate(zip(flat_types, flat_shapes, strict=True))]
        element = pack(types, args)
        if isinstance(element, tuple):
            result = fn(*element)
        else:
            result = fn(element)
        result = _as_structure(result)
        outputs = [g.capture(convert_to_tensor(t)) for t in flatten(result)]
    library = outer.get_collection_ref(FUNCTIONS)
    name = f"__inference_{what}_{getattr(fn, '__name__', 'fn').strip('<>')}_{len(library)}"
    func = Function(name, g, args, outputs, map_structure(lambda _: None, result))
    library.append(func)
    return func


def _as_structure(value: Any) -> Any:
    """TF's rule for what a map function returns: a list is a tuple of components."""
    if isinstance(value, list):
        return tuple(value)
    return value


def lookup(graph: Graph, name: str, definition: str) -> Function:
    """The function ``name`` of ``graph``, rebuilt from ``definition`` the first time a task
    that imported the graph needs it."""
    for func in graph.get_collection(FUNCTIONS):
        if func.name == name:
            return func
    try:
        spec = json.loads(definition)
        g = graph_from_dict(spec["graph"], FunctionGraph(graph))
        func = Function(name, g, [g.get_tensor_by_name(n) for n in spec["inputs"]],
                        [g.get_tensor_by_name(n) for n in spec["outputs"]], None,
                        [g.get_tensor_by_name(n) for n in spec["captured"]])
    except (ValueError, KeyError, TypeError) as e:
        raise errors.InvalidArgumentError(
            f"Function '{name}' has a malformed definition: {e}",
            hint=tr("the dataset op's f_def attr must come from Dataset.map or filter.")) from None
    graph.add_to_collection(FUNCTIONS, func)
    return func
