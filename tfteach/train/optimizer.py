"""``Optimizer``: the TF 1.x base class (compute_gradients / apply_gradients / minimize).

``compute_gradients`` differentiates the loss against the variables' refs with
``tf.gradients``. ``apply_gradients`` creates the slots (one per variable and purpose, e.g.
``w/Momentum``, colocated with ``w``, made with ``get_variable`` under a variable scope as
TF does), then, under the optimizer's name scope, one update op per variable
(``Momentum/update_w/ApplyMomentum``) colocated with that variable, so it runs where the
variable lives (a parameter server in a cluster). With ``global_step`` the returned op is
the step's ``AssignAdd``, which waits for every update.

A gradient may be an ``IndexedSlices`` (e.g. of ``tf.gather``): it is applied with a sparse
update of those rows only. By default its repeated indices are summed first (``Unique`` +
``UnsortedSegmentSum``) and the subclass's ``_apply_sparse`` updates the unique rows;
GradientDescent's ``ScatterSub`` adds repeated indices up by itself.

State: ``_slots`` (slot name -> {variable: slot variable}) and ``_non_slot`` ((name, graph)
-> variable, e.g. Adam's ``beta1_power``). Subclasses fill in ``_create_slots``,
``_prepare`` (hyperparameters become tensors), ``_apply_dense`` and ``_apply_sparse``.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Graph, Operation, Tensor, get_default_graph
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.i18n import tr
from tfteach.ops import array_ops, gather_ops, state_ops
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.control_ops import group
from tfteach.ops.gradients_impl import gradients
from tfteach.ops.state_ops import Variable
from tfteach.ops.variable_scope import get_variable, variable_scope

TRAIN_OP = "train_op"
_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


class Optimizer:
    """Base class of the optimizers; never used directly."""

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[Variable, Variable]] = {}
        self._non_slot: dict[tuple, Variable] = {}

    def get_name(self) -> str:
        return self._name

    # ---- the three public steps ---------------------------------------------------------
    def minimize(self, loss: Tensor, global_step: Any = None, var_list: list | None = None,
                 gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None) -> Operation:
        """``compute_gradients`` then ``apply_gradients``: the op of one training step."""
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        if not [v for g, v in grads_and_vars if g is not None]:
            raise ValueError(with_hint(
                "No gradients provided for any variable, check your graph for ops that do not "
                f"support gradients, between variables {[str(v) for _, v in grads_and_vars]} "
                f"and loss {loss}.", tr("the loss must be computed from the variables (through "
                                        "differentiable ops, not tf.stop_gradient or an int "
                                        "cast).")))
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss: Tensor, var_list: list | None = None,
                          gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list:
        """[(gradient or None, variable)] for the trainable variables (or ``var_list``)."""
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError("gate_gradients must be one of: Optimizer.GATE_NONE, "
                             f"Optimizer.GATE_OP, Optimizer.GATE_GRAPH.  Not {gate_gradients}")
        loss = convert_to_tensor(loss)
        _assert_float([loss])
        g = loss.graph
        var_list = list(var_list) if var_list is not None else \
            g.get_collection("trainable_variables")
        if not var_list:
            raise ValueError("No variables to optimize.")
        for v in var_list:
            _check_variable(v)
        grads = gradients(loss, [v._ref() for v in var_list], grad_ys=grad_loss,
                          gate_gradients=gate_gradients == self.GATE_OP,
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == self.GATE_GRAPH:
            from tfteach.ops.gradients_impl import gate
            with g.as_default():
                present = [x for x in grads if x is not None]
                gated = iter(gate(present) if present else [])
                grads = [next(gated) if x is not None else None for x in grads]
        pairs = list(zip(grads, var_list, strict=True))
        _assert_float([v for gr, v in pairs if gr is not None])
        return pairs

    def apply_gradients(self, grads_and_vars: Iterable, global_step: Any = None,
                        name: str | None = None) -> Operation:
        """Create the update ops for ``(gradient, variable)`` pairs; returns the train op."""
        pairs = _converted(grads_and_vars)
        var_list = [v for gr, v in pairs if gr is not None]
        if not var_list:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[str(v) for _, v in pairs]}.")
        g = var_list[0].graph
        with g.as_default():
            with g.control_dependencies(None):
                self._create_slots(var_list)
            with g.name_scope(name or self._name) as scope:
                self._prepare()
                updates = [self._update(gr, v) for gr, v in pairs if gr is not None]
                train_op = self._finish_step(g, updates, global_step, scope)
        ref = g.get_collection_ref(TRAIN_OP)
        if train_op not in ref:
            ref.append(train_op)
        return train_op

    def _update(self, grad: Tensor | IndexedSlices, var: Variable) -> Operation:
        g = var.graph
        with g.name_scope("update_" + var.op.name), g.colocate_with(var.op):
            if isinstance(grad, IndexedSlices):
                update = self._apply_sparse_duplicate_indices(grad, var)
            else:
                update = self._apply_dense(grad, var)
        return update.op if isinstance(update, Tensor) else update

    def _finish_step(self, g: Graph, updates: list, global_step: Any, scope: str) -> Operation:
        if global_step is None:
            return self._finish(updates, scope)
        with g.control_dependencies([self._finish(updates, "update")]), \
                g.colocate_with(global_step.op):
            return state_ops.assign_add(global_step, 1, name=scope).op

    # ---- slots ----------------------------------------------------------------------------
    def get_slot(self, var: Variable, name: str) -> Variable | None:
        """The slot variable ``name`` (e.g. 'momentum', 'm') kept for ``var``, or None."""
        return self._slots.get(name, {}).get(var)

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """Every variable this optimizer created (slots and e.g. Adam's beta powers)."""
        g = get_default_graph()
        out = [v for slots in self._slots.values() for v in slots.values() if v.graph is g]
        out += [v for (_, graph), v in self._non_slot.items() if graph is g]
        return sorted(out, key=lambda v: v.name)

    def _slot_dict(self, slot_name: str) -> dict:
        return self._slots.setdefault(slot_name, {})

    def _get_or_make_slot_with_initializer(self, var: Variable, initializer: Any, shape: Any,
                                           dtype: Any, slot_name: str, op_name: str) -> Variable:
        slots = self._slot_dict(slot_name)
        if var not in slots:
            slots[var] = create_slot(var, initializer, shape, dtype, op_name)
        return slots[var]

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        from tfteach.ops.init_ops import Zeros
        return self._get_or_make_slot_with_initializer(var, Zeros(), var.shape, var.dtype,
                                                       slot_name, op_name)

    def _create_non_slot_variable(self, initial_value: Any, name: str,
                                  colocate_with: Variable) -> Variable:
        g = colocate_with.graph
        key = (name, g)
        if key not in self._non_slot:
            with g.as_default(), g.colocate_with(colocate_with.op):
                self._non_slot[key] = Variable(initial_value, name=name, trainable=False)
        return self._non_slot[key]

    def _get_non_slot_variable(self, name: str, graph: Graph | None = None) -> Variable | None:
        return self._non_slot.get((name, graph or get_default_graph()))

    # ---- subclass hooks -------------------------------------------------------------------
    def _create_slots(self, var_list: list) -> None:
        """Create the slots every variable needs (none by default)."""

    def _prepare(self) -> None:
        """Turn hyperparameters into tensors (inside the optimizer's name scope)."""

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        raise NotImplementedError

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Any:
        """Sum the rows of repeated indices, then ``_apply_sparse`` (TF's default)."""
        unique, positions = gather_ops.unique(grad.indices)
        count = array_ops.reshape(array_ops.slice_(array_ops.shape(unique), [0], [1]), [])
        summed = gather_ops.unsorted_segment_sum(grad.values, positions, count)
        return self._apply_sparse(IndexedSlices(summed, unique, grad.dense_shape), var)

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        """Update the rows ``grad.indices`` (unique) of ``var`` by ``grad.values``."""
        raise NotImplementedError(f"{type(self).__name__} has no sparse update; pass "
                                  "tf.convert_to_tensor(grad) to apply it densely.")

    def _finish(self, update_ops: list, name_scope: str) -> Operation:
        return group(*update_ops, name=name_scope)

    @staticmethod
    def _call_if_callable(param: Any) -> Any:
        return param() if callable(param) else param

    def _hyper(self, value: Any, name: str) -> Tensor:
        return convert_to_tensor(self._call_if_callable(value), name=name)

    @staticmethod
    def _cast(t: Tensor, var: Variable) -> Tensor:
        return array_ops.cast(t, var.dtype)


def create_slot(primary: Variable, initializer: Any, shape: Any, dtype: Any,
                op_name: str) -> Variable:
    """TF's slot_creator: variable ``<primary>/<op_name>`` beside ``primary``, not trainable."""
    g = primary.graph
    with variable_scope(None, default_name=f"{primary.op.name}/{op_name}"), \
            g.colocate_with(primary.op):
        return get_variable("", shape=shape, dtype=dtype, initializer=initializer,
                            trainable=False)


def _check_variable(v: Any) -> None:
    if not isinstance(v, Variable):
        raise NotImplementedError(with_hint(
            f"Trying to optimize unsupported type {v!r}.",
            tr("optimizers update tf.Variable objects (var_list=[...]).")))


def _assert_float(tensors: list) -> None:
    for t in tensors:
        if t.dtype not in _FLOATS:
            raise ValueError(with_hint(
                f"Invalid type {t.dtype.name} for {t.name}, expected: "
                f"[{', '.join(d.name for d in _FLOATS)}].",
                tr("gradients exist only for floating point values; cast with "
                   "tf.cast(x, tf.float32).")))


def _converted(grads_and_vars: Iterable) -> list:
    pairs = [tuple(p) for p in grads_and_vars]
    if not pairs:
        raise ValueError("No variables provided.")
    out = []
    for gr, v in pairs:
        if gr is not None and not isinstance(gr, IndexedSlices):
            try:
                gr = convert_to_tensor(gr)
            except (TypeError, ValueError):
                raise TypeError(f"Gradient must be convertible to a Tensor or IndexedSlices, "
                                f"or None: {gr}") from None
        _check_variable(v)
        out.append((gr, v))
    return out

