"""Variable scopes and ``get_variable``: named, shareable variables (TF 1.x).

``get_variable(name)`` looks a variable up by its full name (the variable scope's name, a
``/``, then ``name``) in the graph's variable store, and creates it when the scope allows:

- ``reuse=False`` (the default): create; an existing name is a ValueError;
- ``reuse=True``: look up; a missing name is a ValueError;
- ``reuse=tf.AUTO_REUSE``: look up, or create when missing.

Reuse is inherited by sub-scopes (``reuse=False`` inside a reusing scope still reuses, as in
TF). Entering a ``VariableScope`` object reopens that scope with its own reuse flag, which is
why the multi-GPU tower pattern wraps its loop in
``with tf.variable_scope(tf.get_variable_scope()):``. A variable scope also opens a name
scope (uniquified like any name scope), but variable names depend only on variable scopes.

State, per graph (kept in graph collections, as TF does): the variable store
(full name -> Variable), the current ``VariableScope`` and how often each scope name was
opened (for ``default_name`` uniquification; leaving a named scope resets its sub-scopes'
counts, leaving a reopened ``VariableScope`` restores the counts it found).
"""
from __future__ import annotations

import contextlib
import enum
import os
import runpy
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Graph, GraphKeys, Tensor, get_default_graph
from tfteach.framework.tensor_shape import as_shape, unknown_shape
from tfteach.i18n import tr
from tfteach.ops import init_ops
from tfteach.ops.partitioned_variables import PartitionedVariable, get_partitioned_variable
from tfteach.ops.state_ops import Variable

_STORE_KEY = "__variable_store"
_SCOPE_KEY = "__varscope"
REGULARIZATION_LOSSES = "regularization_losses"


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1

    def __repr__(self) -> str:
        return "tf.AUTO_REUSE"


AUTO_REUSE = _ReuseMode.AUTO_REUSE


class VariableScope:
    """A variable scope: its full name, reuse flag and defaults for new variables."""

    def __init__(self, reuse: Any, name: str = "", initializer: Any = None,
                 regularizer: Callable | None = None, dtype: Any = dtypes.float32,
                 name_scope: str = "", partitioner: Callable | None = None) -> None:
        self._name = name
        self._reuse = reuse
        self._initializer = initializer
        self._regularizer = regularizer
        self._dtype = dtypes.as_dtype(dtype)
        self._name_scope = name_scope
        self._partitioner = partitioner

    name = property(lambda self: self._name)
    reuse = property(lambda self: self._reuse)
    initializer = property(lambda self: self._initializer)
    regularizer = property(lambda self: self._regularizer)
    dtype = property(lambda self: self._dtype)
    original_name_scope = property(lambda self: self._name_scope)
    partitioner = property(lambda self: self._partitioner)

    def reuse_variables(self) -> None:
        """From now on, ``get_variable`` in this scope returns existing variables."""
        self._reuse = True

    def set_initializer(self, initializer: Any) -> None:
        self._initializer = initializer

    def set_regularizer(self, regularizer: Callable | None) -> None:
        self._regularizer = regularizer

    def set_dtype(self, dtype: Any) -> None:
        self._dtype = dtypes.as_dtype(dtype)

    def set_partitioner(self, partitioner: Callable | None) -> None:
        self._partitioner = partitioner

    def get_variable(self, name: str, shape: Any = None, dtype: Any = None,
                     initializer: Any = None, regularizer: Callable | None = None,
                     trainable: bool = True, collections: list | None = None,
                     validate_shape: bool = True, partitioner: Callable | None = None,
                     **unused: Any) -> Variable | PartitionedVariable:
        full = f"{self._name}/{name}" if self._name and name else (name or self._name)
        # get_variable("") names the variable after the scope itself (optimizer slots); the
        # trailing '/' uses that name verbatim, as TF does.
        op_name = full if name else full + "/"
        g = get_default_graph()
        dtype = dtypes.as_dtype(dtype) if dtype is not None else self._dtype
        initializer = initializer if initializer is not None else self._initializer
        regularizer = regularizer or self._regularizer
        store = _store(g)

        def make(part_name: str, part_shape: Any, part_init: Any) -> Variable:
            return store.get_variable(part_name, part_shape, dtype, part_init, regularizer,
                                      self._reuse, trainable, collections, validate_shape)
        with g.name_scope(None):
            partitioner = partitioner or self._partitioner
            if partitioner is not None and name:
                reuse = (self._reuse is True or self._reuse is AUTO_REUSE, self._reuse is True)
                return get_partitioned_variable(store, full, shape, dtype, initializer,
                                                partitioner, reuse, make)
            return store.get_variable(full, shape, dtype, initializer, regularizer, self._reuse,
                                      trainable, collections, validate_shape, op_name)

    def __repr__(self) -> str:
        return f"<tf.VariableScope '{self._name}' reuse={self._reuse!r}>"


class _VariableStore:
    """One graph's variables made by ``get_variable``: full name -> Variable."""

    def __init__(self) -> None:
        self.vars: dict[str, Variable] = {}
        self.created_at: dict[str, str] = {}
        self.scope_counts: dict[str, int] = {}
        self.partitioned: dict[str, PartitionedVariable] = {}

    def get_variable(self, name: str, shape: Any, dtype: dtypes.DType, initializer: Any,
                     regularizer: Callable | None, reuse: Any, trainable: bool,
                     collections: list | None, validate_shape: bool,
                     op_name: str | None = None) -> Variable:
        if name in self.vars:
            if reuse is not True and reuse is not AUTO_REUSE:
                raise ValueError(with_hint(
                    f"Variable {name} already exists, disallowed. Did you mean to set "
                    f"reuse=True or reuse=tf.AUTO_REUSE in VarScope? Originally defined "
                    f"at:\n\n{self.created_at[name]}",
                    tr("to share it, open the scope again with reuse=True (or call "
                       "scope.reuse_variables()).")))
            return self._found(name, shape, dtype)
        if reuse is True:
            raise ValueError(with_hint(
                f"Variable {name} does not exist, or was not created with tf.get_variable(). "
                "Did you mean to set reuse=tf.AUTO_REUSE in VarScope?",
                tr("create it first in a scope without reuse, or use reuse=tf.AUTO_REUSE.")))
        v = _create(name, shape, dtype, initializer, trainable, collections, validate_shape,
                    op_name or name)
        self.vars[name] = v
        self.created_at[name] = "".join(traceback.format_list(_user_frames()))
        if regularizer is not None:
            _regularize(name, v, regularizer)
        return v

    def _found(self, name: str, shape: Any, dtype: dtypes.DType) -> Variable:
        found = self.vars[name]
        if shape is not None and not as_shape(shape).is_compatible_with(found.shape):
            raise ValueError(f"Trying to share variable {name}, but specified shape "
                             f"{as_shape(shape)} and found shape {found.shape}.")
        if dtype is not None and dtype is not found.dtype:
            raise ValueError(f"Trying to share variable {name}, but specified dtype "
                             f"{dtype.name} and found dtype {found.dtype.name}.")
        return found


def _user_frames() -> list:
    """The innermost five stack frames of the user's code, innermost first (TF's
    'Originally defined at')."""
    return [f for f in reversed(traceback.extract_stack()[:-1]) if _is_user_file(f.filename)][:5]


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_RUNPY = os.path.realpath(runpy.__file__)


def _is_user_file(filename: str) -> bool:
    """Not a module of the tfteach package (decided by where it lives, so a checkout in a
    folder that is also named ``tfteach`` still counts as the user's) and not the
    interpreter's start-up machinery (``<frozen runpy>``, which runs ``python -m``)."""
    if filename.startswith("<frozen "):
        return False
    path = os.path.realpath(filename)
    return path != _RUNPY and not path.startswith(_PACKAGE_DIR + os.sep)


def _initial_value(name: str, shape: Any, dtype: dtypes.DType, initializer: Any) -> Any:
    """A callable building the initial value, or the given constant value itself."""
    if initializer is None:
        initializer = (init_ops.GlorotUniform() if dtype.is_floating else init_ops.Zeros())
    if isinstance(initializer, type):
        initializer = initializer(dtype=dtype)
    if not callable(initializer):
        if shape is not None:
            raise ValueError("If initializer is a constant, do not specify shape.")
        return initializer
    sh = unknown_shape() if shape is None else as_shape(shape)
    if not sh.is_fully_defined():
        raise ValueError(with_hint(
            f"Shape of a new variable ({name}) must be fully defined, but instead was {sh}.",
            tr("pass shape=[...] with every dimension known, or a constant initializer "
               "value.")))
    dims = sh.as_list()
    return lambda: initializer(dims, dtype=dtype, partition_info=None)


def _create(name: str, shape: Any, dtype: dtypes.DType, initializer: Any, trainable: bool,
            collections: list | None, validate_shape: bool, op_name: str) -> Variable:
    init = _initial_value(name, shape, dtype, initializer)
    as_dtype = dtype if callable(init) or not isinstance(init, Tensor) else None
    return Variable(init, trainable=trainable, collections=collections,
                    validate_shape=validate_shape, name=op_name, dtype=as_dtype)


def _regularize(name: str, v: Variable, regularizer: Callable) -> None:
    g = v.graph
    with g.name_scope(name + "/Regularizer/"):
        loss = regularizer(v)
    if loss is not None:
        g.add_to_collection(REGULARIZATION_LOSSES, loss)


# ---- per-graph state -----------------------------------------------------------------------
def _store(g: Graph) -> _VariableStore:
    ref = g.get_collection_ref(_STORE_KEY)
    if not ref:
        ref.append(_VariableStore())
    return ref[0]


def get_variable_scope() -> VariableScope:
    """The current variable scope (the root scope, named '', outside any)."""
    ref = get_default_graph().get_collection_ref(_SCOPE_KEY)
    if not ref:
        ref.append(VariableScope(False))
    return ref[0]


def get_variable(name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                 regularizer: Callable | None = None, trainable: bool = True,
                 collections: list | None = None, validate_shape: bool = True,
                 partitioner: Callable | None = None,
                 **unused: Any) -> Variable | PartitionedVariable:
    """Get the variable ``<scope>/name``, or create it (see the module docstring for reuse);
    with a ``partitioner`` (or the scope's), a PartitionedVariable of parts
    (``tfteach.ops.partitioned_variables``)."""
    return get_variable_scope().get_variable(
        name, shape, dtype, initializer, regularizer, trainable, collections, validate_shape,
        partitioner)


@contextlib.contextmanager
def _current_scope(g: Graph, scope: VariableScope) -> Iterator[VariableScope]:
    ref = g.get_collection_ref(_SCOPE_KEY)
    old = get_variable_scope()
    ref[:] = [scope]
    try:
        yield scope
    finally:
        ref[:] = [old]


def _unique_default(g: Graph, parent: VariableScope, prefix: str) -> str:
    counts = _store(g).scope_counts
    full = f"{parent.name}/{prefix}" if parent.name else prefix
    if not counts.get(full):
        return prefix
    i = 1
    while counts.get(f"{full}_{i}"):
        i += 1
    return f"{prefix}_{i}"


def _close_subscopes(counts: dict[str, int], name: str, before: dict | None) -> None:
    """Leaving a scope, as TF: a reopened ``VariableScope`` puts the counts back as they were;
    a named one forgets its sub-scopes, so entering it again (a second tower, a model built
    again with ``reuse=True``) names its unnamed layers ``conv2d``, ``conv2d_1``... again."""
    if before is not None:
        counts.clear()
        counts.update(before)
        return
    for key in counts:
        if key.startswith(name + "/"):
            counts[key] = 0


@contextlib.contextmanager
def variable_scope(name_or_scope: Any = None, default_name: str | None = None,
                   values: Any = None, initializer: Any = None,
                   regularizer: Callable | None = None, reuse: Any = None, dtype: Any = None,
                   partitioner: Callable | None = None, auxiliary_name_scope: bool = True,
                   **unused: Any) -> Iterator[VariableScope]:
    """Open a variable scope (and a name scope) for ``get_variable``; yields the scope."""
    if name_or_scope is None and default_name is None:
        raise TypeError("If default_name is None then name_or_scope is required")
    if reuse is False:
        reuse = None  # TF: a scope cannot turn reuse off; False means "inherit"
    if name_or_scope is None and reuse:
        raise ValueError("reuse=True cannot be used without a name_or_scope")
    g = get_default_graph()
    reopened = isinstance(name_or_scope, VariableScope)
    base = name_or_scope if reopened else get_variable_scope()
    if reopened:
        new_name = base.name
        short = new_name.split("/")[-1]
    else:
        short = name_or_scope or _unique_default(g, base, default_name)
        new_name = f"{base.name}/{short}" if base.name else short
    here = g.get_name_scope()
    opens = auxiliary_name_scope and bool(short)
    with (g.name_scope(short) if opens else contextlib.nullcontext(here + "/" if here else "")) \
            as opened:
        counts = _store(g).scope_counts
        counts[new_name] = counts.get(new_name, 0) + 1
        before = dict(counts) if reopened else None
        scope = VariableScope(reuse or base.reuse, new_name,
                              initializer if initializer is not None else base.initializer,
                              regularizer or base.regularizer,
                              dtype if dtype is not None else base.dtype,
                              base.original_name_scope if reopened else opened,
                              partitioner if partitioner is not None else base.partitioner)
        with _current_scope(g, scope):
            try:
                yield scope
            finally:
                _close_subscopes(counts, new_name, before)


def get_local_variable(name: str, shape: Any = None, dtype: Any = None,
                       initializer: Any = None, **kwargs: Any) -> Variable:
    """A non-trainable variable in ``LOCAL_VARIABLES`` (e.g. a worker's own step counter)."""
    kwargs["collections"] = list(kwargs.get("collections") or []) + [GraphKeys.LOCAL_VARIABLES]
    return get_variable(name, shape, dtype, initializer, trainable=False, **kwargs)
