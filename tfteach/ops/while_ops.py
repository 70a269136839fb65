"""``tf.while_loop``, built as TF 1.x builds it.

Per loop variable: ``Enter`` (into the loop's frame) -> ``Merge(Enter, NextIteration)`` ->
``Switch(Merge, LoopCond)``: the true side feeds the body through an ``Identity``, the false
side leaves the frame through ``Exit``. ``LoopCond`` holds ``cond(*merges)``; the body's
results go through ``NextIteration`` back into the ``Merge`` (the back edge, set after the
body is built, as TF's ``_update_input``). Tensors from outside that ``cond`` or ``body``
read enter once as constant ``Enter``s (``WhileContext``). The runtime runs the frame's
iterations (``tfteach.runtime.frames``).

Checks as TF's: the body returns the loop variables' structure, each keeps its dtype, and
its shape stays within the variable's shape (or its ``shape_invariants``).
``maximum_iterations`` adds a counter variable, as TF does.
"""
from __future__ import annotations

from typing import Any, Callable

from tfteach.errors import with_hint
from tfteach.framework.graph import Tensor
from tfteach.framework.tensor_shape import TensorShape, as_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops, math_ops, tensor_array
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.cond_ops import _unpack_if_singleton, flatten, pack, same_structure
from tfteach.ops.control_flow_ops import enter, exit_, loop_cond, merge, next_iteration, switch
from tfteach.ops.flow_context import WhileContext

__all__ = ["while_loop", "build_loop"]


def while_loop(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any = None,
               parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: str | None = None,
               maximum_iterations: Any = None, return_same_structure: bool = False) -> Any:
    """Repeat ``body`` while ``cond`` holds; returns the loop variables' last values."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if parallel_iterations < 1:
        raise TypeError("'parallel_iterations' must be a positive integer.")
    if loop_vars is None or (isinstance(loop_vars, (list, tuple)) and not loop_vars):
        raise ValueError("'loop_vars' must be provided.")
    if tensor_array.holds_tensor_array(loop_vars):
        return _with_tensor_arrays(cond, body, loop_vars, shape_invariants, parallel_iterations,
                                   name, maximum_iterations, return_same_structure)
    if maximum_iterations is not None:
        return _with_counter(cond, body, loop_vars, shape_invariants, parallel_iterations,
                             name, maximum_iterations, return_same_structure)
    g = graph_of(flatten(loop_vars))
    with g.as_default(), g.name_scope(name or "while") as scope:
        structure = loop_vars if isinstance(loop_vars, (list, tuple)) else [loop_vars]
        flat = [convert_to_tensor(v) for v in flatten(structure)]
        invariants = _invariants(flat, shape_invariants)
        ctx = WhileContext(g, scope.rstrip("/") + "/while_context", parallel_iterations)
        exits = _build(ctx, cond, body, structure, flat, invariants)
        result = pack(structure, exits)
    if not isinstance(loop_vars, (list, tuple)):
        return result[0]
    return result if return_same_structure else _unpack_if_singleton(result)


def _with_counter(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any,
                  parallel_iterations: int, name: str | None, maximum_iterations: Any,
                  return_same_structure: bool) -> Any:
    """TF's ``maximum_iterations``: a counter ``i`` joins the loop variables."""
    with graph_of(flatten(loop_vars)).as_default():
        limit = convert_to_tensor(maximum_iterations, name="maximum_iterations")
        zero = array_ops.constant(0, dtype=limit.dtype)
    structure = loop_vars if isinstance(loop_vars, (list, tuple)) else [loop_vars]
    invariants = None if shape_invariants is None else (TensorShape([]), shape_invariants)

    def counted_cond(i: Tensor, lv: Any) -> Tensor:
        return math_ops.logical_and(i < limit, cond(*lv))

    def counted_body(i: Tensor, lv: Any) -> tuple:
        out = body(*lv)
        return i + 1, (list(out) if isinstance(out, (list, tuple)) else [out])

    _, result = while_loop(counted_cond, counted_body, (zero, list(structure)), invariants,
                           parallel_iterations, name=name, return_same_structure=True)
    result = pack(structure, flatten(result))
    if not isinstance(loop_vars, (list, tuple)):
        return result[0]
    return result if return_same_structure else _unpack_if_singleton(result)


def _with_tensor_arrays(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any,
                        parallel_iterations: int, name: str | None, maximum_iterations: Any,
                        return_same_structure: bool) -> Any:
    """TF's loop over TensorArrays: each travels as its flow, and is rebuilt around it."""
    template = loop_vars if isinstance(loop_vars, (list, tuple)) else [loop_vars]

    def flow_cond(*flows: Any) -> Any:
        return cond(*tensor_array.from_flows(template, list(flows)))

    def flow_body(*flows: Any) -> Any:
        out = body(*tensor_array.from_flows(template, list(flows)))
        return tensor_array.to_flows(out)

    flows = while_loop(flow_cond, flow_body, tensor_array.to_flows(list(template)),
                       shape_invariants, parallel_iterations, name=name,
                       maximum_iterations=maximum_iterations, return_same_structure=True)
    result = tensor_array.from_flows(template, flows)
    if not isinstance(loop_vars, (list, tuple)):
        return result[0]
    result = type(loop_vars)(result) if not hasattr(loop_vars, "_fields") else result
    return result if return_same_structure else _unpack_if_singleton(result)


def _invariants(flat: list[Tensor], shape_invariants: Any) -> list[TensorShape]:
    if shape_invariants is None:
        return [t.shape for t in flat]
    shapes = [as_shape(s) for s in flatten(shape_invariants)]
    if len(shapes) != len(flat):
        raise ValueError("shape_invariants must have the same structure as loop_vars.")
    for t, s in zip(flat, shapes, strict=True):
        if not s.is_compatible_with(t.shape):
            raise ValueError(
                f"The shape invariant specified for {t.name} is not compatible with the "
                f"initial shape of the loop variable. It enters the loop with shape "
                f"{t.shape}, but the specified shape invariant is {s}.")
    return shapes


def build_loop(ctx: WhileContext, cond: Callable, body: Callable, loop_vars: list) -> list:
    """A loop in ``ctx`` (a context made by the caller, e.g. a gradient's) over the flat
    list ``loop_vars``; returns its exits. As TF's backward loops, it does not enforce
    shape invariants: a body's result may know less of its shape than the loop variable."""
    flat = [convert_to_tensor(v) for v in loop_vars]
    return _build(ctx, cond, body, flat, flat, [t.shape for t in flat], enforce_shapes=False)


def _build(ctx: WhileContext, cond: Callable, body: Callable, structure: Any,
           flat: list[Tensor], invariants: list[TensorShape],
           enforce_shapes: bool = True) -> list[Tensor]:
    """Enter, Merge, the cond's LoopCond, Switch, the body, NextIteration and Exit."""
    g = ctx.graph
    with ctx.outside():
        for t, shape in zip(flat, invariants, strict=True):
            e = enter(t, ctx.name, is_constant=False,
                      parallel_iterations=ctx.parallel_iterations)
            e._shape = shape
            ctx.enters.append(e)
    for e in ctx.enters:
        e.op._flow_context = ctx
    with ctx.entered():
        ctx.merges = [merge([e, e])[0] for e in ctx.enters]
        ctx.pivot_for_pred = ctx.merges[0]
        c = convert_to_tensor(cond(*pack(structure, ctx.merges)))
        ctx.loop_cond = loop_cond(c, name="LoopCond")
        ctx.switches = [switch(m, ctx.loop_cond) for m in ctx.merges]
        ctx.body_inputs = [array_ops.identity(s[1]) for s in ctx.switches]
        ctx.pivot_for_body = ctx.body_inputs[0]
        out = body(*pack(structure, ctx.body_inputs))
        if not isinstance(out, (list, tuple)) and len(structure) == 1 and \
                not isinstance(structure[0], (list, tuple, dict)):
            out = [out]
        results = _check_body(structure, out, flat, invariants if enforce_shapes else None)
        ctx.nexts = [next_iteration(r) for r in results]
    for m, n in zip(ctx.merges, ctx.nexts, strict=True):
        g._update_input(m.op, 1, n)
    with ctx.entered():
        ctx.exits = [exit_(s[0]) for s in ctx.switches]
    return ctx.exits


def _check_body(structure: Any, out: Any, flat: list[Tensor],
                invariants: list[TensorShape] | None) -> list[Tensor]:
    if not same_structure(list(structure), list(out) if isinstance(out, tuple) else out):
        raise ValueError(with_hint(
            "The two structures don't have the same nested structure.\n\n"
            f"First structure: {list(structure)}\n\nSecond structure: {out}",
            tr("the body of tf.while_loop must return as many values as loop_vars, "
               "nested the same way.")))
    results = [convert_to_tensor(v) for v in flatten(out)]
    for t, r, shape in zip(flat, results, invariants or [None] * len(flat), strict=True):
        if r.dtype is not t.dtype:
            raise TypeError(with_hint(
                f"Loop var {t.name} enters the loop with type <dtype: '{t.dtype.name}'> but has type "
                f"<dtype: '{r.dtype.name}'> after 1 iteration. {t.name} type should remain constant.",
                tr("return the loop variable in the dtype it came in (tf.cast in the body).")))
        if shape is not None and not _within(r.shape, shape):
            raise ValueError(with_hint(
                f"Input tensor `{t.name}` enters the loop with shape {_tuple(shape)}, but "
                f"has shape {_tuple(r.shape)} after one iteration. To allow the shape to vary "
                "across iterations, use the `shape_invariants` argument of tf.while_loop to "
                "specify a less-specific shape.",
                tr("give shape_invariants with None for the dimensions that change.")))
    return results


def _within(shape: TensorShape, invariant: TensorShape) -> bool:
    """TF's ``_ShapeLessThanOrEqual``: ``shape`` is at least as specific as ``invariant``."""
    if invariant.rank is None:
        return True
    if shape.rank != invariant.rank:
        return False
    return all(b is None or a == b for a, b in zip(shape.dims, invariant.dims, strict=True))


def _tuple(shape: TensorShape) -> str:
    if shape.rank is None:
        return "<unknown>"
    dims = tuple(shape.as_list())
    return str(dims)
