"""What a program is: ``Graph``, ``Operation`` and ``Tensor``.

A ``Graph`` owns its operations in creation order (``op._id`` is the index) and the stacks
that shape new ops: the name scope, device functions, colocation, control dependencies and
the resource container (``container``: stateful ops with an empty ``container`` attr get it).
Ops are created only through ``Graph.create_op``, which validates inputs, makes the name
unique (TF's ``unique_name`` rules), runs the op's shape function, and applies the device
stack innermost-first exactly as TF 1.x does.

State: ``_ops`` (list), ``_by_name`` (name -> Operation), ``_names_in_use`` (lower-cased name -> count),
``_collections`` (key -> list), ``version`` (number of ops; bumps on every new op).
Invariants: names are unique; every input of an op belongs to the same graph and was
created before it, so ``_ops`` is a topological order.
"""
from __future__ import annotations

import contextlib
import re
import threading
import warnings
from typing import Any, Callable, Iterator, Sequence

from tfteach.errors import with_hint
from tfteach.i18n import tr
from tfteach.framework import dtypes
from tfteach.framework import registry
from tfteach.framework.device_spec import DeviceSpec, canonical, merge_device
from tfteach.framework.tensor_shape import TensorShape, as_shape

# Operator overloads are installed by tfteach.ops (the framework layer cannot import ops).
_OPERATORS: dict[str, Callable] = {}


# Graph.as_graph_def's writer, installed by tfteach.framework.graph_def (which imports this).
_GRAPH_DEF_WRITER: list[Callable] = []


def register_graph_def_writer(fn: Callable) -> None:
    """Install ``fn(ops, add_shapes=...)`` as the writer behind ``Graph.as_graph_def``."""
    _GRAPH_DEF_WRITER[:] = [fn]


def register_operator(name: str, fn: Callable) -> None:
    """Install ``fn`` as ``Tensor.<name>`` (``__add__``, ``__matmul__``, ...)."""
    _OPERATORS[name] = fn


def _operator(name: str):
    def method(self, *args):
        try:
            fn = _OPERATORS[name]
        except KeyError:
            raise TypeError(f"Tensor has no operator {name}: import tfteach first") from None
        return fn(self, *args)
    method.__name__ = name
    return method


class Tensor:
    """A symbolic handle to one output of an Operation, e.g. ``MatMul:0``."""

    __slots__ = ("op", "value_index", "dtype", "_shape", "is_ref", "__weakref__")
    __array_priority__ = 100

    def __init__(self, op: "Operation", value_index: int, dtype: dtypes.DType,
                 shape: TensorShape, is_ref: bool = False) -> None:
        self.op = op
        self.value_index = value_index
        self.dtype = dtype
        self._shape = shape
        self.is_ref = is_ref

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def graph(self) -> "Graph":
        return self.op.graph

    @property
    def device(self) -> str:
        return self.op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self) -> list["Operation"]:
        return [op for op in self.op.graph._consumers.get(self.op._id, ())
                if any(t is self for t in op.inputs)]

    def eval(self, feed_dict: dict | None = None, session: Any = None) -> Any:
        """Run this tensor in ``session`` (default: the default session)."""
        return _run_in(session, self.graph, self, feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self.dtype.name}>"

    def __str__(self) -> str:
        dev = f", device={self.device}" if self.device else ""
        return f'Tensor("{self.name}", shape={self._shape}, dtype={self.dtype.name}{dev})'

    # TF1: tensors compare and hash by identity (object's own, in C: tensors are dict keys
    # on every session.run)
    __hash__ = object.__hash__
    __eq__ = object.__eq__

    def __bool__(self) -> bool:
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed. Use "
                        "`if t is not None:` instead of `if t:` to test if a tensor is "
                        "defined, and use TensorFlow ops such as tf.cond to execute "
                        "subgraphs conditioned on the value of a tensor.")

    def __iter__(self):
        raise TypeError("Tensor objects are only iterable when eager execution is enabled. "
                        "To iterate over this tensor use tf.split or tf.unstack.")

    for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
                  "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__",
                  "__lt__", "__le__", "__gt__", "__ge__", "__pow__", "__getitem__",
                  "__abs__", "__and__", "__or__", "__invert__", "__mod__", "__rmod__",
                  "__floordiv__", "__rfloordiv__"):
        locals()[_name] = _operator(_name)
    del _name


class Operation:
    """A node of the graph: type, inputs, attrs, outputs and a requested device."""

    __slots__ = ("graph", "type", "name", "_id", "inputs", "outputs", "control_inputs",
                 "attrs", "_device", "op_def", "_colocation", "_flow_context", "__weakref__")

    def __init__(self, graph: "Graph", op_type: str, name: str, inputs: list[Tensor],
                 attrs: dict, op_def: registry.OpDef) -> None:
        self.graph = graph
        self.type = op_type
        self.name = name
        self.inputs = tuple(inputs)
        self.attrs = attrs
        self.op_def = op_def
        self.control_inputs: list[Operation] = []
        self.outputs: tuple[Tensor, ...] = ()
        self._device = ""
        self._colocation: list[str] = []
        self._id = -1
        # The cond or while_loop context the op was built in (tfteach.ops.flow_context)
        self._flow_context: Any = None

    @property
    def device(self) -> str:
        return self._device

    def _set_device(self, device: Any) -> None:
        self._device = canonical(device.to_string() if isinstance(device, DeviceSpec)
                                 else device)

    @property
    def node_def(self) -> Any:
        """TF's ``NodeDef`` protobuf of this op (name, op, input, device, attr), as
        ``op.node_def`` is in TF; device functions read ``op.node_def.op``."""
        if not _GRAPH_DEF_WRITER:
            raise RuntimeError("GraphDef support is not loaded: import tfteach first")
        return _GRAPH_DEF_WRITER[0]([self]).node[-1]    # OneHot's depth Const comes first

    def colocation_groups(self) -> list[bytes]:
        names = self._colocation or [self.name]
        return [f"loc:@{n}".encode() for n in sorted(set(names))]

    def get_attr(self, name: str) -> Any:
        """An attr's value; ``_class`` (the colocation list) exists only on colocated ops."""
        if name == "_class" and self._colocation:
            return [f"loc:@{n}".encode() for n in self._colocation]
        try:
            return self.attrs[name]
        except KeyError:
            message = f"Operation '{self.name}' has no attr named '{name}'."
            if name == "_class":
                message = with_hint(message, tr(
                    "only an op created under tf.colocate_with has a '_class' attr; "
                    "op.colocation_groups() works on every op."))
            raise ValueError(message) from None

    def values(self) -> tuple[Tensor, ...]:
        return self.outputs

    def run(self, feed_dict: dict | None = None, session: Any = None) -> None:
        """Run this op in ``session`` (default: the default session)."""
        _run_in(session, self.graph, self, feed_dict)

    def summary(self) -> str:
        """TF's one-line NodeDef form, used in runtime error messages."""
        attrs = [f"{k}={_attr_text(v)}" for k, v in sorted(self.attrs.items())
                 if k in ("T", "dtype", "shape", "transpose_a", "transpose_b", "N")]
        if self._colocation:
            attrs.append("_class=[" + ", ".join(f'"loc:@{n}"' for n in self._colocation) + "]")
        if self._device:
            attrs.append(f'_device="{self._device}"')
        ins = ", ".join([t.op.name if t.value_index == 0 else t.name for t in self.inputs] +
                        [f"^{c.name}" for c in self.control_inputs])
        return f"{self.name} = {self.type}[{', '.join(attrs)}]({ins})"

    def __repr__(self) -> str:
        return f"<tf.Operation '{self.name}' type={self.type}>"

    __str__ = summary


def _attr_text(v: Any) -> str:
    if isinstance(v, dtypes.DType):
        return v.enum
    if isinstance(v, TensorShape):
        return v.bracket()
    return repr(v).lower() if isinstance(v, bool) else repr(v)


_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\\/>-]*$")
_SCOPE_CHARS = "letters, digits and _ . - > / \\ only (no ':' or spaces; ':0' names a tensor)"


class _NamedColocation:
    """A colocation target known only by name (its op is created later, with no device)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._colocation = [name]
        self._device = ""


class _ControlFrame:
    """One ``control_dependencies`` block: its control inputs and the ops built inside it."""

    def __init__(self, inputs: list[Operation]) -> None:
        self.inputs = inputs
        self.built: set[Operation] = set()


class GraphKeys:
    """Standard collection names."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    GLOBAL_STEP = "global_step"
    SUMMARIES = "summaries"
    QUEUE_RUNNERS = "queue_runners"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    REGULARIZATION_LOSSES = "regularization_losses"
    METRIC_VARIABLES = "metric_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    INIT_OP = "init_op"
    READY_OP = "ready_op"
    SAVERS = "savers"
    VARIABLES = GLOBAL_VARIABLES


class Graph:
    """A TensorFlow 1.x computation graph."""

    def __init__(self) -> None:
        self._ops: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._names_in_use: dict[str, int] = {}
        self._consumers: dict[int, list[Operation]] = {}
        self._name_stack = ""
        self._device_stack: list[Callable | None] = []
        self._colocation_stack: list[Operation] = []
        self._control_stack: list[_ControlFrame] = []
        self._collections: dict[str, list] = {}
        self._finalized = False
        self._container = ""
        self.seed: int | None = None
        self._lock = threading.RLock()
        # The control-flow context new ops are built in (a cond branch, a while loop's
        # body): it rewrites their inputs (``prepare_inputs``) and adopts them (``add_op``).
        self._flow_context: Any = None
        self._unfetchable: set[Operation] = set()    # a cond's own Switch and pivots (TF)

    # ---- building ------------------------------------------------------------------
    @property
    def version(self) -> int:
        return len(self._ops)

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        self._finalized = True

    def create_op(self, op_type: str, inputs: Sequence[Tensor], attrs: dict | None = None,
                  name: str | None = None) -> Operation:
        """Create, validate, name, shape and place an op; the only way ops are made."""
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        op_def = registry.get(op_type)
        if self._flow_context is not None:
            inputs = self._flow_context.prepare_inputs(list(inputs))
        with self._lock:
            for t in inputs:
                self._check_input(t, op_type, name)
            attrs = dict(attrs or {})
            if self._container and attrs.get("container") == "":
                attrs["container"] = self._container
            op = Operation(self, op_type, self._op_name(name or op_type), list(inputs),
                           attrs, op_def)
            outs = op_def.shape_fn(op)
            op.outputs = tuple(Tensor(op, i, dt, as_shape(sh), is_ref=(op_def.ref_output and i == 0))
                               for i, (dt, sh) in enumerate(outs))
            self._add_control_inputs(op)
            self._apply_device_and_colocation(op)
            self._register(op)
        if self._flow_context is not None:
            self._flow_context.add_op(op)
        return op

    def _op_name(self, name: str) -> str:
        """A name ending in '/' is a scope name used verbatim (TF's convention)."""
        if name.endswith("/"):
            return name[:-1]
        return self.unique_name(name)

    def _check_input(self, t: Any, op_type: str, name: str | None) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"Input to op '{name or op_type}' must be a Tensor, got {t!r}")
        if t.graph is not self:
            raise ValueError(with_hint(
                f"Tensor {t} must be from the same graph as the op '{name or op_type}' being "
                "created.", tr("build all ops of one program inside the same "
                               "`with graph.as_default():` block.")))

    def _register(self, op: Operation) -> None:
        op._id = len(self._ops)
        self._ops.append(op)
        self._by_name[op.name] = op
        for t in op.inputs:
            self._consumers.setdefault(t.op._id, []).append(op)
        for c in op.control_inputs:
            self._consumers.setdefault(c._id, [])

    def _add_control_inputs(self, op: Operation) -> None:
        """TF's rule: a block's control inputs are skipped when one of the op's data inputs
        was built inside that block (it already waits for them), or is itself one of them."""
        input_ops = {t.op for t in op.inputs}
        for frame in self._control_stack:
            if not input_ops & frame.built:
                op.control_inputs.extend(d for d in frame.inputs
                                         if d not in input_ops and d not in op.control_inputs)
            frame.built.add(op)

    def _apply_device_and_colocation(self, op: Operation) -> None:
        """Device functions innermost-first, then colocation (TF 1.x order)."""
        for fn in reversed(self._device_stack):
            if fn is None:
                break
            op._set_device(fn(op))
        for target in self._colocation_stack:
            op._colocation = sorted(set(op._colocation) | set(target._colocation or [target.name]))
            if not target._device:
                continue
            if op._device and op._device != target._device:
                warnings.warn(f"Tried to colocate {op.name} with an op {target.name} that had "
                              f"a different device: {op._device} vs {target._device}. "
                              "Ignoring colocation property.", stacklevel=4)
            else:
                op._device = target._device

    def prevent_fetching(self, op: Operation) -> None:
        """Mark ``op`` as not fetchable (TF: a cond's pivots, which are dead half the time)."""
        self._unfetchable.add(op)

    def is_fetchable(self, tensor_or_op: Any) -> bool:
        op = tensor_or_op.op if isinstance(tensor_or_op, Tensor) else tensor_or_op
        return op not in self._unfetchable

    def _update_input(self, op: Operation, index: int, t: Tensor) -> None:
        """Replace ``op``'s input ``index`` by ``t``: a while loop's back edge (its
        ``NextIteration`` is built after the ``Merge`` it feeds), as TF's ``_update_input``."""
        inputs = list(op.inputs)
        old = inputs[index]
        inputs[index] = t
        op.inputs = tuple(inputs)
        if old.op not in {i.op for i in inputs}:
            users = self._consumers.get(old.op._id, [])
            if op in users:
                users.remove(op)
        self._consumers.setdefault(t.op._id, []).append(op)

    def _add_control_input(self, op: Operation, dep: Operation) -> None:
        if dep not in op.control_inputs:
            op.control_inputs.append(dep)
            self._consumers.setdefault(dep._id, [])

    # ---- names -----------------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        """TF's unique_name: ``x, x, x_1, x`` becomes ``x, x_1, x_1_1, x_2``; names that
        differ only in case count as one (``mul``, ``Mul`` -> ``mul``, ``Mul_1``)."""
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        i = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = i + 1
        if i > 0:
            base = key
            while key in self._names_in_use:
                key = f"{base}_{i}"
                i += 1
            if mark_as_used:
                self._names_in_use[key] = 1
            name = f"{name}_{i - 1}"
        return name

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Open a name scope; yields the scope string with a trailing ``/``."""
        if name:
            self._check_scope_name(name)
        old = self._name_stack
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._name_stack = old

    def _check_scope_name(self, name: str) -> None:
        """TF's rule: a root scope name is a valid op name; a nested one may also start
        with ``_ - \\ /`` (it follows a ``/``)."""
        if self._name_stack and not _VALID_SCOPE_NAME.match(name):
            raise ValueError(with_hint(
                f"'{name}' is not a valid scope name. A scope name has to match the following "
                f"pattern: {_VALID_SCOPE_NAME.pattern}", tr("use {chars}.", chars=_SCOPE_CHARS)))
        if not self._name_stack and not _VALID_OP_NAME.match(name):
            raise ValueError(with_hint(
                f"'{name}' is not a valid root scope name. A root scope name has to match the "
                f"following pattern: {_VALID_OP_NAME.pattern}",
                tr("start with a letter, a digit or '.', then use {chars}.", chars=_SCOPE_CHARS)))

    # ---- device, colocation, control dependencies -------------------------------------
    @contextlib.contextmanager
    def container(self, container_name: str) -> Iterator[str]:
        """``with g.container('name'):`` stateful ops created inside (variables, queues,
        accumulators) keep their state in that resource container of their device, which
        ``tf.Session.reset(target, ['name'])`` clears on a cluster."""
        old, self._container = self._container, container_name
        try:
            yield container_name
        finally:
            self._container = old

    @contextlib.contextmanager
    def device(self, device_name_or_function: Any) -> Iterator[None]:
        """Push a device spec, a device function, or None (which hides outer scopes)."""
        d = device_name_or_function
        if d is None:
            fn: Callable | None = None
        elif callable(d):
            fn = d
        else:
            fn = merge_device(d)
        self._device_stack.append(fn)
        try:
            yield
        finally:
            self._device_stack.pop()

    @contextlib.contextmanager
    def colocate_with(self, op: Any, ignore_existing: bool = False) -> Iterator[None]:
        if op is None:
            yield
            return
        if hasattr(op, "_as_graph_element"):          # a tf.Variable
            op = op._as_graph_element()
        op = op.op if isinstance(op, Tensor) else op
        if not isinstance(op, Operation):
            raise TypeError(f"colocate_with needs an op, a tensor or a variable, got {op!r}")
        op = op.inputs[0].op if op.type == "Identity" and op.inputs and op.inputs[0].is_ref \
            else op
        old_devices = self._device_stack
        self._device_stack = []
        old_coloc = self._colocation_stack
        self._colocation_stack = [] if ignore_existing else list(old_coloc)
        self._colocation_stack.append(op)
        try:
            yield
        finally:
            self._device_stack = old_devices
            self._colocation_stack = old_coloc

    @contextlib.contextmanager
    def _colocate_with_name(self, name: str) -> Iterator[None]:
        """Colocate new ops with an op that does not exist yet (TF's ``_class`` attr scope,
        used for a variable's initializer, which is built before the variable)."""
        self._colocation_stack.append(_NamedColocation(name))
        try:
            yield
        finally:
            self._colocation_stack.pop()

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Any) -> Iterator[None]:
        """Ops built inside wait for ``control_inputs``; ``None`` clears the outer blocks."""
        old = self._control_stack
        if control_inputs is None:
            self._control_stack = []
        else:
            current = {d for frame in old for d in frame.inputs}
            new: list[Operation] = []
            for c in control_inputs:
                c = self.as_graph_element(c, allow_tensor=True, allow_operation=True)
                c = c.op if isinstance(c, Tensor) else c
                if c not in current:
                    current.add(c)
                    new.append(c)
            self._control_stack = old + [_ControlFrame(new)]
        try:
            yield
        finally:
            self._control_stack = old

    # ---- lookup ---------------------------------------------------------------------
    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        """TF's ``GraphDef`` protobuf of this graph (see ``tfteach.framework.graph_def``);
        ``from_version``: only the ops added since ``graph.version`` was that number."""
        if not _GRAPH_DEF_WRITER:
            raise RuntimeError("GraphDef support is not loaded: import tfteach first")
        return _GRAPH_DEF_WRITER[0](self._ops[from_version or 0:], add_shapes=add_shapes)

    def get_operations(self) -> list[Operation]:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        if not isinstance(name, str):
            raise TypeError(f"Operation names are strings (or similar), not {type(name).__name__}.")
        return self.as_graph_element(name, allow_tensor=False, allow_operation=True)

    def get_tensor_by_name(self, name: str) -> Tensor:
        if not isinstance(name, str):
            raise TypeError(f"Tensor names are strings (or similar), not {type(name).__name__}.")
        return self._element_by_name(name, True, False)    # (as_graph_element does for a str)

    def as_graph_element(self, obj: Any, allow_tensor: bool = True,
                         allow_operation: bool = True) -> Any:
        """Resolve a Tensor, Operation or name to an element of this graph (TF's rules)."""
        if isinstance(obj, (Tensor, Operation)):
            if obj.graph is not self:
                kind = "Tensor" if isinstance(obj, Tensor) else "Operation"
                raise ValueError(f"{kind} {obj} is not an element of this graph.")
            if isinstance(obj, Tensor) and not allow_tensor:
                raise TypeError("Can not convert a Tensor into a Operation.")
            if isinstance(obj, Operation) and not allow_operation:
                raise TypeError("Can not convert a Operation into a Tensor.")
            return obj
        if hasattr(obj, "_as_graph_element"):
            return self.as_graph_element(obj._as_graph_element(), allow_tensor, allow_operation)
        if isinstance(obj, str):
            return self._element_by_name(obj, allow_tensor, allow_operation)
        raise TypeError(f"Can not convert a {type(obj).__name__} into a graph element.")

    def _element_by_name(self, name: str, allow_tensor: bool, allow_operation: bool) -> Any:
        if ":" in name and allow_tensor:
            op_name, _, idx = name.rpartition(":")
            if op_name not in self._by_name:
                raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. "
                               f"The operation, '{op_name}', does not exist in the graph.")
            op = self._by_name[op_name]
            if not idx.isdigit() or int(idx) >= len(op.outputs):
                raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. "
                               f"The operation, '{op_name}', exists but only has "
                               f"{len(op.outputs)} outputs.")
            return op.outputs[int(idx)]
        if ":" in name:
            raise ValueError(f"Name '{name}' appears to refer to a Tensor, not a Operation.")
        if name not in self._by_name:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        if not allow_operation:
            raise ValueError(f"The name '{name}' refers to an Operation, not a Tensor. "
                             f"Tensor names must be of the form \"<op_name>:<output_index>\".")
        return self._by_name[name]

    # ---- collections ------------------------------------------------------------------
    def add_to_collection(self, name: str, value: Any) -> None:
        self._collections.setdefault(name, []).append(value)

    def add_to_collections(self, names: Any, value: Any) -> None:
        for n in ([names] if isinstance(names, str) else set(names)):
            self.add_to_collection(n, value)

    def get_collection(self, name: str, scope: str | None = None) -> list:
        items = self._collections.get(name, [])
        if scope is None:
            return list(items)
        regex = re.compile(scope)   # TF: re.match on each item's name; nameless items skipped
        return [i for i in items
                if isinstance(getattr(i, "name", None), str) and regex.match(i.name)]

    def get_collection_ref(self, name: str) -> list:
        return self._collections.setdefault(name, [])

    def get_all_collection_keys(self) -> list[str]:
        return [k for k, v in self._collections.items() if v]

    def clear_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    # ---- defaults, validation and printing ----------------------------------------
    @contextlib.contextmanager
    def as_default(self) -> Iterator["Graph"]:
        _stack().append(self)
        try:
            yield self
        finally:
            _stack().pop()

    def validate(self) -> None:
        """Check the graph's invariants; raises ValueError that prints the whole graph."""
        problems = list(_problems(self))
        if problems:
            raise ValueError(with_hint(
                "Graph is invalid:\n  " + "\n  ".join(problems) + "\n\nThe graph:\n" + str(self),
                tr("create ops only through tfteach functions, in one graph.")))

    lint = validate

    def __str__(self) -> str:
        lines = [f"Graph with {len(self._ops)} ops:"]
        for op in self._ops:
            ins = ", ".join([t.name for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs])
            outs = ", ".join(f"{t.dtype.name}{t.shape.bracket()}" for t in op.outputs) or "-"
            dev = f"  @ {op.device}" if op.device else ""
            lines.append(f"  {op.name} = {op.type}({ins}) -> {outs}{dev}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(str(self))


def _problems(g: Graph) -> Iterator[str]:
    seen: set[str] = set()
    for i, op in enumerate(g._ops):
        if op.name in seen:
            yield f"duplicate name '{op.name}'"
        seen.add(op.name)
        if op._id != i:
            yield f"op '{op.name}' has id {op._id} but sits at position {i}"
        for t in op.inputs:
            if t.graph is not g:
                yield f"op '{op.name}' has input {t.name} from another graph"
            elif t.op._id >= op._id and t.op.op_def.extra.get("flow") != "next":
                yield f"op '{op.name}' uses {t.name}, created after it (a cycle?)"
        for c in op.control_inputs:
            if c.graph is not g:
                yield f"op '{op.name}' has control input '{c.name}' from another graph"


# ---- the default-graph stack (thread-local, as in TF) -----------------------------------
_DEFAULT = threading.local()
_global_default: list[Graph] = [Graph()]


def _stack() -> list[Graph]:
    if not hasattr(_DEFAULT, "stack"):
        _DEFAULT.stack = []
    return _DEFAULT.stack


def get_default_graph() -> Graph:
    stack = _stack()
    return stack[-1] if stack else _global_default[0]


def reset_default_graph() -> None:
    if _stack():
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. "
                             "If you need a cleared graph, exit the nesting and create a new "
                             "graph.")
    _global_default[0] = Graph()


# ---- default session hook (the runtime installs the session lookup) ------------------------
_default_session_lookup: list[Callable[[], Any]] = []


def _run_in(session: Any, graph: Graph, fetch: Any, feed_dict: dict | None) -> Any:
    if session is None and _default_session_lookup:
        session = _default_session_lookup[0]()
    if session is None:
        raise ValueError("Cannot evaluate tensor using `eval()`: No default session is "
                         "registered. Use `with sess.as_default()` or pass an explicit "
                         "session to `eval(session=sess)`")
    if session.graph is not graph:
        raise ValueError("Cannot use the given session to evaluate tensor: the tensor's "
                         "graph is different from the session's graph.")
    return session.run(fetch, feed_dict)
