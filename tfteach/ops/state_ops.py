"""Variables: ``VariableV2`` and the ops that update it, plus the Python ``Variable`` object.

A variable's storage lives in the session's resource container (per task in a cluster), on
the device its ``VariableV2`` op was placed on. The op outputs a *reference* (a ``VarRef``);
ops that take refs (``Assign``, ``AssignAdd``, ``AssignSub`` and the optimizers' apply ops)
update it; every other consumer reads its value, which fails with TF's
``FailedPreconditionError`` when the variable was never initialized.

Invariants: a ref edge always connects two ops on the same device (the placer colocates
them); updates write into the variable's buffer, as TF's kernels do, so two concurrent
non-locking updates never lose a whole one (a fetched value is a copy and never changes
afterwards); ``use_locking=True`` holds the variable's lock; VariableV2 and Assign have no
int32 GPU kernel, as in TF. The optimizers' training ops are in ``training_ops``.
"""
from __future__ import annotations

import contextlib
from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, Tensor, get_default_graph
from tfteach.framework.registry import GPU_FLOAT, register_op
from tfteach.framework.tensor_shape import as_shape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.common import (binary_inputs, convert_to_tensor, graph_of,
                                register_tensor_conversion)
from tfteach.ops.control_ops import group, no_op


# ---- kernels ---------------------------------------------------------------------------------
def _variable_kernel(ctx):
    attrs = ctx.attrs
    return ctx.resources.variable(attrs["shared_name"] or ctx.op.name, ctx.device,
                                  attrs["dtype"], attrs["shape"], attrs.get("container", ""))


def _assign_kernel(ctx, ref, value):
    if ctx.attrs["validate_shape"] and ref.value is not None and ref.value.shape != value.shape:
        from tfteach.errors import InvalidArgumentError
        raise InvalidArgumentError(
            f"Assign requires shapes of both tensors to match. lhs shape= "
            f"{list(ref.value.shape)} rhs shape= {list(value.shape)}", op=ctx.op,
            hint=tr("assign a value of the variable's shape, or pass validate_shape=False."))
    with _locked(ctx, ref):
        ref.write(value, ctx.xp, ctx.op)
    return ref


# AssignAdd and AssignSub add into the variable's buffer, as TF's in-place kernels: two
# workers bumping the global step at once never lose an increment (a one-element add runs
# whole while NumPy holds the GIL), and larger arrays race at most on single elements.
def _assign_add_kernel(ctx, ref, value):
    with _locked(ctx, ref):
        buf = ref.buffer(ctx.op)
        ctx.xp.add(buf, value, out=buf)
    return ref


def _assign_sub_kernel(ctx, ref, value):
    with _locked(ctx, ref):
        buf = ref.buffer(ctx.op)
        ctx.xp.subtract(buf, value, out=buf)
    return ref


def _locked(ctx: Any, ref: Any) -> Any:
    """TF's ``use_locking``: hold the variable's lock for the whole read-modify-write."""
    return ref.lock if ctx.attrs.get("use_locking") else contextlib.nullcontext()


def _count_up_to_kernel(ctx, ref):
    """TF's CountUpTo: the variable's value before adding one; at ``limit`` OutOfRange."""
    limit = ctx.attrs["limit"]
    with ref.lock:
        buf = ref.buffer(ctx.op)
        before = buf.copy()
        if before >= limit:
            from tfteach.errors import OutOfRangeError
            raise OutOfRangeError(f"Reached limit of {limit}", op=ctx.op,
                                  hint=tr("the counter (e.g. num_epochs of an input "
                                          "producer) is used up; initialize its local "
                                          "variable again (tf.local_variables_initializer()) "
                                          "to start over."))
        ctx.xp.add(buf, 1, out=buf)
    return before


def _ref_shape(op):
    ref = op.inputs[0]
    return [(ref.dtype, ref.shape)]


register_op("VariableV2", lambda op: [(op.attrs["dtype"], op.attrs["shape"])], _variable_kernel,
            gpu_types=GPU_FLOAT, dtype_attr="dtype", stateful=True, ref_output=True,
            copyable=True, idle=True)
register_op("Assign", _ref_shape, _assign_kernel, gpu_types=GPU_FLOAT, stateful=True,
            ref_inputs=(0,), ref_output=True)
register_op("AssignAdd", _ref_shape, _assign_add_kernel, gpu_types=GPU_FLOAT, stateful=True,
            ref_inputs=(0,), ref_output=True)
register_op("AssignSub", _ref_shape, _assign_sub_kernel, gpu_types=GPU_FLOAT, stateful=True,
            ref_inputs=(0,), ref_output=True)
register_op("CountUpTo", _ref_shape, _count_up_to_kernel, gpu_types=frozenset(),
            stateful=True, ref_inputs=(0,))
register_op("IsVariableInitialized", lambda op: [(dtypes.bool_, as_shape([]))],
            lambda ctx, ref: ref.value is not None, gpu_types=GPU_FLOAT, dtype_attr="dtype",
            ref_inputs=(0,))


# ---- op constructors -------------------------------------------------------------------------
def _ref_of(v: Any) -> Tensor:
    if isinstance(v, Variable):
        return v._variable
    if isinstance(v, Tensor) and v.is_ref:
        return v
    raise TypeError(with_hint(
        f"'{getattr(v, 'name', v)}' needs a variable (a ref tensor), got {v!r}.",
        tr("assign to a tf.Variable, not to a tensor computed from it.")))


def _update(op_type: str, ref: Any, value: Any, name: str | None, **attrs: Any) -> Tensor:
    r = _ref_of(ref)
    with r.graph.as_default(), r.graph.name_scope(name or op_type) as scope:
        val = convert_to_tensor(value, dtype=r.dtype, name="value")
        if not r.shape.is_compatible_with(val.shape) and attrs.get("validate_shape", True):
            raise ValueError(f"Shapes {r.shape} and {val.shape} are incompatible for "
                             f"'{name or op_type}' (op: '{op_type}') on variable '{r.op.name}'.")
        attrs.setdefault("use_locking", False)
        return r.graph.create_op(op_type, [r, val], {"T": r.dtype, **attrs},
                                 name=scope).outputs[0]


def assign(ref: Any, value: Any, validate_shape: bool = True, use_locking: bool = True,
           name: str | None = None) -> Tensor:
    return _update("Assign", ref, value, name, validate_shape=validate_shape,
                   use_locking=use_locking)


def assign_add(ref: Any, value: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    return _update("AssignAdd", ref, value, name, use_locking=use_locking)


def assign_sub(ref: Any, value: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    return _update("AssignSub", ref, value, name, use_locking=use_locking)


def count_up_to(ref: Any, limit: int, name: str | None = None) -> Tensor:
    """``tf.count_up_to``: add one to an integer variable until ``limit``; the value before
    (at ``limit``, running it raises OutOfRangeError)."""
    r = _ref_of(ref)
    return r.graph.create_op("CountUpTo", [r], {"T": r.dtype, "limit": int(limit)},
                             name=name or "CountUpTo").outputs[0]


def is_variable_initialized(variable: Any, name: str | None = None) -> Tensor:
    r = _ref_of(variable)
    return r.graph.create_op("IsVariableInitialized", [r], {"dtype": r.dtype},
                             name=name or "IsVariableInitialized").outputs[0]


# ---- the Variable object --------------------------------------------------------------------
class Variable:
    """A TF 1.x ``tf.Variable``: ``VariableV2`` + ``initial_value`` + ``Assign`` + ``read``."""

    def __init__(self, initial_value: Any = None, trainable: bool = True,
                 collections: list | None = None, validate_shape: bool = True,
                 name: str | None = None, dtype: Any = None,
                 expected_shape: Any = None) -> None:
        if initial_value is None:
            raise ValueError("initial_value must be specified.")
        g = graph_of([initial_value]) if not callable(initial_value) else get_default_graph()
        with g.as_default(), g.name_scope(name or "Variable") as scope:
            iv = self._initial(g, initial_value, dtype, scope.rstrip("/"))
            shape = iv.shape if validate_shape else unknown_shape()
            self._variable = g.create_op("VariableV2", [], {
                "shape": shape, "dtype": iv.dtype, "container": "", "shared_name": ""},
                name=scope).outputs[0]
            with g.colocate_with(self._variable.op):
                self._initializer_op = assign(self._variable, iv, validate_shape,
                                              name="Assign").op
                self._snapshot = array_ops.identity(self._variable, name="read")
        self._initial_value = iv
        self.trainable = trainable
        keys = list(collections or [GraphKeys.GLOBAL_VARIABLES])
        if trainable and GraphKeys.TRAINABLE_VARIABLES not in keys:
            keys.append(GraphKeys.TRAINABLE_VARIABLES)
        g.add_to_collections(keys, self)

    @staticmethod
    def _initial(g, initial_value: Any, dtype: Any, var_name: str) -> Tensor:
        if callable(initial_value):   # built before the variable, colocated with it (TF 1.x)
            with g._colocate_with_name(var_name), g.name_scope("Initializer"), g.device(None):
                return convert_to_tensor(initial_value(), dtype=dtype, name="initial_value")
        return convert_to_tensor(initial_value, dtype=dtype, name="initial_value")

    # -- properties TF code uses
    name = property(lambda self: self._variable.name)
    op = property(lambda self: self._variable.op)
    graph = property(lambda self: self._variable.graph)
    device = property(lambda self: self._variable.device)
    dtype = property(lambda self: self._variable.dtype)
    shape = property(lambda self: self._variable.shape)
    initializer = property(lambda self: self._initializer_op)
    initial_value = property(lambda self: self._initial_value)

    def get_shape(self):
        return self.shape

    def value(self) -> Tensor:
        return self._snapshot

    def read_value(self) -> Tensor:
        return array_ops.identity(self._variable, name="read")

    def _ref(self) -> Tensor:
        return self._variable

    def _as_graph_element(self) -> Tensor:
        return self._snapshot

    def assign(self, value, use_locking=False, name=None):
        return assign(self._variable, value, use_locking=use_locking, name=name)

    def assign_add(self, delta, use_locking=False, name=None):
        return assign_add(self._variable, delta, use_locking=use_locking, name=name)

    def count_up_to(self, limit, name=None):
        return count_up_to(self._variable, limit, name=name)

    def assign_sub(self, delta, use_locking=False, name=None):
        return assign_sub(self._variable, delta, use_locking=use_locking, name=name)

    def eval(self, session: Any = None) -> Any:
        return self._snapshot.eval(session=session)

    def load(self, value: Any, session: Any = None) -> None:
        from tfteach.framework.graph import _default_session_lookup
        sess = session or (_default_session_lookup[0]() if _default_session_lookup else None)
        sess.run(self._initializer_op, {self._initial_value: value})

    def __repr__(self) -> str:
        return (f"<tf.Variable '{self.name}' shape={self.shape} "
                f"dtype={self.dtype.name}_ref>")

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __getattr__(self, item: str):
        if item.startswith("_"):
            raise AttributeError(item)
        return getattr(self._snapshot, item)


def _delegate(op_name: str):
    def method(self, *args):
        return getattr(self._snapshot, op_name)(*args)
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__",
              "__lt__", "__le__", "__gt__", "__ge__", "__pow__", "__abs__", "__getitem__"):
    setattr(Variable, _name, _delegate(_name))

register_tensor_conversion(Variable, lambda v, dtype: v._snapshot)


# ---- collections and initializers -----------------------------------------------------------
def global_variables(scope: str | None = None) -> list:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES, scope)


def local_variables(scope: str | None = None) -> list:
    return get_default_graph().get_collection(GraphKeys.LOCAL_VARIABLES, scope)


def trainable_variables(scope: str | None = None) -> list:
    return get_default_graph().get_collection(GraphKeys.TRAINABLE_VARIABLES, scope)


def variables_initializer(var_list: list, name: str = "init") -> Any:
    """One op that runs every variable's initializer."""
    if var_list:
        return group(*[v.initializer for v in var_list], name=name)
    return no_op(name=name)


def global_variables_initializer() -> Any:
    return variables_initializer(global_variables())


def local_variables_initializer() -> Any:
    return variables_initializer(local_variables(), name="init_1")


initialize_all_variables = global_variables_initializer
all_variables = global_variables


def binary_check(op_type: str, x: Any, y: Any) -> tuple:
    """Re-exported for optimizers: TF's dtype rule for two operands."""
    return binary_inputs(op_type, x, y)
