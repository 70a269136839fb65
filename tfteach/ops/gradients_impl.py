"""Reverse-mode autodiff over the graph: ``tf.gradients``.

``gradients(ys, xs)`` adds the ops that compute d(sum ys)/dx for every x to the graph and
returns them. It follows TF 1.x:

1. The ops *between* xs and ys: reachable forward from the xs (through data edges, not
   through ``stop_gradients``) and backward from the ys. Only they are differentiated.
2. They are visited in TF's order: an op is ready once every op on the path that consumes
   its outputs was visited, and ready ops are visited first come first served, starting
   from the ys' ops; so every consumer of a tensor has contributed its gradient before the
   tensor's producer is visited, in the order TF's contributions come. Several
   contributions to one tensor are summed with ``AddN``: per device first, beside the first
   contribution on that device, then across devices (TF's multi-device sum).
   A gradient may be an ``IndexedSlices`` (``tf.gather``'s, for its params): several of them
   are concatenated (values, and indices, in that order) into one; with a dense one among
   them all are summed densely. An op gets its output gradients summed into dense tensors
   unless its gradient function passes IndexedSlices on (``OpDef.sparse_grads``: Identity).
3. Each op's registered gradient function ``grad(op, *output_grads)`` (TF's convention,
   kept next to the op's kernel in ``tfteach.ops.*``) returns one gradient per input.
   ``StopGradient`` and other non-differentiable ops return ``None``; an op on the path
   with no gradient at all is a ``LookupError``. An x that no y uses gets ``None``, or zeros
   like it with ``unconnected_gradients=tf.UnconnectedGradients.ZERO``.

Names and places match TF: everything lives under ``gradients/`` (``gradients_1/`` for the
next call) with one ``<op name>_grad/`` scope per op. Gradient ops take the current device
scope, or, with ``colocate_gradients_with_ops=True``, the device and colocation group of
their forward op. ``gate_gradients=True`` (an optimizer's ``GATE_OP``) makes the needed
input gradients of a multi-input op wait for each other (``tuple/control_dependency``).

State: none beyond the graph; all bookkeeping is local to one call.
"""
from __future__ import annotations

import collections
import contextlib
import functools
from collections.abc import Iterator, Sequence
from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Graph, Operation, Tensor
from tfteach.framework.indexed_slices import IndexedSlices
from tfteach.framework.registry import NOT_DIFFERENTIABLE
from tfteach.i18n import tr
from tfteach.ops import array_grad, math_grad  # noqa: F401 (they register the gradients)
from tfteach.ops import array_ops, gather_ops, math_ops, while_grad
from tfteach.ops.common import as_tensor_or_none, convert_to_tensor
from tfteach.ops.control_ops import group
from tfteach.ops.unconnected_gradients import UnconnectedGradients


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method: Any = None, stop_gradients: Any = None,
              unconnected_gradients: Any = UnconnectedGradients.NONE) -> list:
    """The symbolic gradients of ``sum(ys)`` with respect to each of ``xs`` (for an x that
    no y uses: None, or zeros with ``unconnected_gradients='zero'``)."""
    unconnected = _unconnected(unconnected_gradients)
    ys, xs = _tensors(ys, "ys"), _tensors(xs, "xs")
    stops = _tensors(stop_gradients, "stop_gradients") if stop_gradients is not None else []
    g = ys[0].graph
    within = while_grad.enclosing_loop(g._flow_context)
    if within is not None:
        _refuse_initial_values(g, ys, xs, within)
    with g.as_default(), g.name_scope(name or "gradients"):
        grads = _backprop(g, ys, xs, grad_ys, _Backprop(g, xs, set(), colocate_gradients_with_ops,
                                                        gate_gradients), stops, within)
    if unconnected is UnconnectedGradients.ZERO:
        with g.as_default():      # TF builds them outside the gradients/ scope
            grads = [array_ops.zeros_like(x) if gr is None else gr
                     for x, gr in zip(xs, grads, strict=True)]
    return grads


def _backprop(g: Graph, ys: list, xs: list, grad_ys: Any, run: "_Backprop", stops: list,
              loop: Any = None, body: bool = False) -> list:
    """Differentiate: the ops between, in TF's order (each while loop inside ``loop``, the
    loop whose ops are plain ops here, as one unit), then the xs' summed gradients;
    ``body``: ``loop``'s body is being differentiated (paths end at the xs)."""
    run.between = _between_ops(g, ys, xs, loop, body)
    run.stop_ops = {t.op for t in stops}
    run.seed(ys, grad_ys)
    for unit in _backprop_order(run.between, ys, loop):
        if isinstance(unit, Operation):
            run.visit(unit)
        else:
            run.visit_loop(unit)
    return [run.total(x) for x in xs]


def _body_gradients(ys: list, xs: list, grad_ys: list, loop: Any,
                    colocate: bool = False) -> list:
    """A while loop body's gradients (results -> inputs), for ``while_grad``; with
    ``colocate`` each gradient op sits with its forward op, as outside the loop."""
    g = ys[0].graph
    return _backprop(g, ys, xs, grad_ys, _Backprop(g, xs, set(), colocate, False), [], loop,
                     body=True)


def _refuse_initial_values(g: Graph, ys: list, xs: list, loop: Any) -> None:
    """TF's error for ``tf.gradients`` in a loop's body along a path from an x through the
    initial value of one of the loop's variables (its ``Enter``)."""
    if len(loop.body_inputs) != len(loop.enters):      # (called in the loop's cond)
        return
    reached: set[Operation] = set()
    stack = [x.op for x in xs]
    while stack:             # where a gradient can flow: float outputs, differentiable ops
        op = stack.pop()
        if op not in reached:
            reached.add(op)
            stack.extend(c for c in g._consumers.get(op._id, ())
                         if c.op_def.grad is not NOT_DIFFERENTIABLE and
                         any(t.op is op and t.dtype.is_floating for t in c.inputs))
    used = _between_ops(g, ys, [t for t in loop.body_inputs], loop)
    entered = [e for e, b in zip(loop.enters, loop.body_inputs, strict=True)
               if e.op in reached and b.op in used]
    if entered:
        op = _nearest(entered[0].op, {x.op for x in xs})
        raise ValueError(with_hint(
            f"Cannot compute gradient inside while loop with respect to op '{op.name}'. We do "
            "not support taking the gradient wrt or through the initial value of a loop "
            "variable. Gradients can be computed through loop invariants or wrt the input "
            "parameters to the loop body.",
            tr("differentiate with respect to the loop variable as the body receives it, or "
               "to a tensor the body reads from outside the loop.")))


def _nearest(start: Operation, targets: set) -> Operation:
    """The first of ``targets`` found going back from ``start`` through inputs."""
    queue, seen = collections.deque([start]), set()
    while queue:
        op = queue.popleft()
        if op in targets:
            return op
        if op not in seen:
            seen.add(op)
            queue.extend(t.op for t in op.inputs)
    return start


def _unconnected(value: Any) -> UnconnectedGradients:
    try:
        return UnconnectedGradients(value)
    except ValueError:
        raise ValueError(with_hint(
            f"Unknown value for unconnected_gradients: '{value}'",
            tr("pass tf.UnconnectedGradients.NONE or .ZERO (or 'none' / 'zero').")
        )) from None


def _tensors(values: Any, what: str) -> list[Tensor]:
    items = values if isinstance(values, (list, tuple)) else [values]
    out = []
    for v in items:
        t = as_tensor_or_none(v)
        if t is None:
            raise TypeError(with_hint(
                f"tf.gradients: every element of {what} must be a Tensor or a Variable, got "
                f"{v!r}.", tr("pass the tensors the graph computed (e.g. the loss) and the "
                              "variables to differentiate against.")))
        out.append(t)
    if not out:
        raise ValueError(f"tf.gradients needs at least one tensor in {what}.")
    return out


def _between_ops(g: Graph, ys: list[Tensor], xs: list[Tensor], loop: Any = None,
                 body: bool = False) -> set:
    """Ops on some path from an x to a y (TF's ``reached`` ∩ reverse reachability); in the
    while loop ``loop`` (``tf.gradients`` in its body, or its body differentiated), paths
    stay in one iteration: never through the ops that carry its variables from one
    iteration to the next or out (``while_grad.loop_plumbing``); ``body``: paths end at
    the xs (the body's inputs, which come round again)."""
    x_ops = {x.op for x in xs} if body else set()
    fenced = while_grad.loop_plumbing(loop) if loop is not None else set()
    reached: set[Operation] = set()
    stack = [x.op for x in xs]
    while stack:
        op = stack.pop()
        if op in reached or op in fenced:
            continue
        reached.add(op)
        stack.extend(g._consumers.get(op._id, ()))
    between: set[Operation] = set()
    stack = [y.op for y in ys]
    while stack:
        op = stack.pop()
        if op in between or op not in reached:
            continue
        between.add(op)
        if op not in x_ops:
            stack.extend(t.op for t in op.inputs)
    return between


def _backprop_order(between: set, ys: list[Tensor], loop: Any = None) -> list:
    """TF's visiting order over ``between``: an op is queued once all its consumers there
    were visited; the queue starts with the ys' ops and is served first in, first out.
    A while loop inside ``loop`` is one unit (its ``WhileContext``; inputs: its Enters');
    ``loop``'s own ops (its body is being differentiated) are plain ops."""
    unit = {op: _unit(op, loop) for op in between}
    inputs = {u: [] for u in unit.values()}
    for op, u in unit.items():
        inputs[u].extend(t.op for t in op.inputs if t.op in between and unit[t.op] is not u)
    pending: dict[Any, int] = dict.fromkeys(inputs, 0)
    for u, ins in inputs.items():
        for i in ins:
            pending[unit[i]] += 1
    queue = collections.deque(dict.fromkeys(unit[y.op] for y in ys
                                            if y.op in unit and pending[unit[y.op]] == 0))
    order = []
    while queue:
        u = queue.popleft()
        order.append(u)
        for i in inputs[u]:
            pending[unit[i]] -= 1
            if pending[unit[i]] == 0:
                queue.append(unit[i])
    return order


def _unit(op: Operation, loop: Any) -> Any:
    ctx = while_grad.loop_unit(op, loop)
    return op if ctx is None else ctx


class _Backprop:
    """One call's bookkeeping: gradient contributions per tensor, summed on demand."""

    def __init__(self, g: Graph, xs: list[Tensor], between: set, colocate: bool,
                 gate: bool) -> None:
        self.g = g
        self.xs = set(xs)
        self.between = between
        self.colocate = colocate
        self.gate = gate
        self.stop_ops: set[Operation] = set()
        self.parts: dict[Tensor, list[Tensor]] = {}
        self.summed: dict[Tensor, Tensor | None] = {}

    def seed(self, ys: list[Tensor], grad_ys: Any) -> None:
        if grad_ys is None:
            given = [None] * len(ys)
        else:
            given = list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys]
        if len(given) != len(ys):
            raise ValueError(f"Passed {len(given)} grad_ys for {len(ys)} ys")
        for i, (y, gy) in enumerate(zip(ys, given, strict=True)):
            with self._placed(y.op):
                self.parts.setdefault(y, []).append(self._seed_grad(i, y, gy))

    @staticmethod
    def _seed_grad(i: int, y: Tensor, gy: Any) -> Tensor:
        if gy is None and y.shape.is_fully_defined():
            return array_ops.constant(1, dtype=y.dtype, shape=y.shape.as_list(),
                                      name=f"grad_ys_{i}")
        if gy is None:
            one = array_ops.constant(1, dtype=y.dtype, name=f"grad_ys_{i}")
            return array_ops.fill(array_ops.shape(y), one)
        t = convert_to_tensor(gy, dtype=y.dtype, name=f"grad_ys_{i}")
        if not t.shape.is_compatible_with(y.shape):
            raise ValueError(f"grad_ys[{i}] has shape {t.shape}, but ys[{i}] ('{y.name}') "
                             f"has shape {y.shape}.")
        return t

    @contextlib.contextmanager
    def _placed(self, op: Operation) -> Iterator[None]:
        if self.colocate:
            with self.g.colocate_with(op):
                yield
        else:
            yield

    def total(self, t: Tensor) -> Tensor | None:
        """The summed gradient of ``t`` (created once, colocated like its producer's grads)."""
        if t not in self.summed:
            parts = self.parts.pop(t, [])
            if not parts:
                self.summed[t] = None
            else:
                with self._placed(t.op):
                    self.summed[t] = _aggregate(parts)
        return self.summed[t]

    def visit(self, op: Operation) -> None:
        if op in self.stop_ops or not any(t.op in self.between or t in self.xs
                                          for t in op.inputs):
            return  # a stop_gradients op, or a source of the path (an x's producer)
        out_grads = [self.total(t) for t in op.outputs]
        if all(gr is None for gr in out_grads):
            return
        grad_fn = op.op_def.grad
        if grad_fn is None:
            raise LookupError(with_hint(
                f"No gradient defined for operation '{op.name}' (op type: {op.type})",
                tr("tf.gradients cannot go through {op_type}; wrap the part that needs no "
                   "gradient in tf.stop_gradient, or leave it out of the loss.",
                   op_type=op.type)))
        with self.g.name_scope(op.name + "_grad"), self._placed(op):
            if not op.op_def.sparse_grads:
                out_grads = [_dense(gr) for gr in out_grads]
            out_grads = self._zeros_for_missing(op, out_grads)
            in_grads = list(grad_fn(op, *out_grads))
            if len(in_grads) != len(op.inputs):
                raise ValueError(f"The gradient function of {op.type} returned "
                                 f"{len(in_grads)} gradients for {len(op.inputs)} inputs "
                                 f"(op '{op.name}').")
            needed = [i for i, (t, gr) in enumerate(zip(op.inputs, in_grads, strict=True))
                      if gr is not None and (t.op in self.between or t in self.xs)]
            if self.gate and len(needed) > 1:
                gated = gate([in_grads[i] for i in needed])
                for i, gr in zip(needed, gated, strict=True):
                    in_grads[i] = gr
        for i in needed:
            self.parts.setdefault(op.inputs[i], []).append(in_grads[i])

    def visit_loop(self, ctx: Any) -> None:
        """A while loop: its outside inputs' gradients from a backward loop (``while_grad``)."""
        exit_grads = [self.total(e) for e in ctx.exits]
        if all(gr is None for gr in exit_grads):
            return
        exit_grads = [_dense(gr) for gr in exit_grads]
        body = functools.partial(_body_gradients, colocate=self.colocate)
        for t, gr in while_grad.loop_gradient(ctx, exit_grads, body):
            if gr is not None and (t.op in self.between or t in self.xs):
                self.parts.setdefault(t, []).append(gr)

    @staticmethod
    def _zeros_for_missing(op: Operation, out_grads: list) -> list:
        """TF passes zeros for float outputs that got no gradient (multi-output ops)."""
        if len(out_grads) == 1:
            return out_grads
        return [array_ops.zeros_like(t) if gr is None and t.dtype.is_floating else gr
                for t, gr in zip(op.outputs, out_grads, strict=True)]


def _aggregate(parts: list) -> Tensor | IndexedSlices:
    """One gradient from several: AddN of tensors (densified if some are IndexedSlices),
    or one IndexedSlices concatenating several (int32 indices cast to int64 if mixed)."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(p, Tensor) for p in parts):
        return _add_n_by_device(parts)
    if any(isinstance(p, Tensor) for p in parts):
        return math_ops.add_n([_dense(p) for p in parts])
    indices = [p.indices for p in parts]
    if len({i.dtype for i in indices}) > 1:
        indices = [array_ops.cast(i, dtypes.int64) for i in indices]
    return IndexedSlices(array_ops.concat([p.values for p in parts], 0),
                         array_ops.concat(indices, 0), parts[0].dense_shape)


def _dense(grad: Any) -> Any:
    """An IndexedSlices summed into a dense tensor (what TF's ops do converting one)."""
    if isinstance(grad, IndexedSlices):
        return gather_ops.indexed_slices_to_tensor(grad)
    return grad


def _add_n_by_device(parts: list[Tensor]) -> Tensor:
    """TF's ``_MultiDeviceAddN``: each device's parts are summed beside the first of them
    (colocated with its op, ignoring outer colocation), then the partial sums are summed
    where the caller places them (with ``colocate_gradients_with_ops``, beside the op)."""
    if len(parts) == 1:
        return parts[0]
    on_device: dict[str, list[Tensor]] = {}
    for t in parts:
        on_device.setdefault(t.device, []).append(t)
    sums = []
    for device in sorted(on_device):
        first = on_device[device][0]
        with first.graph.colocate_with(first.op, ignore_existing=True):
            sums.append(math_ops.add_n(on_device[device]))
    return math_ops.add_n(sums)


def gate(tensors: Sequence[Any], name: str = "tuple") -> list:
    """TF's ``tf.tuple``: identities of ``tensors`` that all wait for every one of them (of
    an IndexedSlices, its values)."""
    g = tensors[0].graph
    with g.name_scope(name):
        barrier = group(*tensors)
        out = []
        with g.control_dependencies([barrier]):
            for t in tensors:
                with g.colocate_with(t.op):
                    out.append(_gated(t))
        return out


def _gated(t: Any) -> Any:
    if isinstance(t, IndexedSlices):
        return IndexedSlices(array_ops.identity(t.values, name="control_dependency"),
                             t.indices, t.dense_shape)
    return array_ops.identity(t, name="control_dependency")
