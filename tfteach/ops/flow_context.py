"""Control-flow contexts: the part of the graph a cond branch or a while loop builds.

While a context is active (``Graph._flow_context``), every new op passes through it, as in
TF 1.x's ``ControlFlowContext``:

- ``prepare_inputs``: an input from outside the context is brought in: through a
  ``Switch`` on the cond's predicate (``CondContext``: the op is dead when its branch is
  not taken), or through a constant ``Enter`` into the loop's frame (``WhileContext``);
  each outside tensor once per context, nested contexts through their outer ones.
- ``add_op``: the op remembers its context (``op._flow_context``); an op with no inputs
  (a constant) gets a control input from the context's pivot, so it runs only in the taken
  branch, once per iteration. In a loop an op that reads only loop constants does too, and
  control inputs from outside the loop are dropped (they belong to another frame).

State per context: ``outer`` (the context it was built in, or None), ``values`` (outside
tensor -> its tensor inside). ``WhileContext`` also lists its loop's ops by role for the
gradient (``while_grad``).
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from tfteach.framework.graph import Graph, Operation, Tensor
from tfteach.ops.control_flow_ops import enter, output_context, switch

__all__ = ["FlowContext", "CondContext", "WhileContext", "in_context"]


def in_context(op: Operation, ctx: "FlowContext") -> bool:
    """Whether ``op``'s outputs live in ``ctx`` or in a context nested inside it."""
    c = output_context(op)
    while c is not None:
        if c is ctx:
            return True
        c = c.outer
    return False


class FlowContext:
    """What cond and while contexts share: entering, bringing values in, adopting ops."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.outer: FlowContext | None = graph._flow_context
        self.values: dict[Tensor, Tensor] = {}

    @contextlib.contextmanager
    def entered(self) -> Iterator["FlowContext"]:
        g = self.graph
        old, g._flow_context = g._flow_context, self
        try:
            yield self
        finally:
            g._flow_context = old

    @contextlib.contextmanager
    def outside(self) -> Iterator[None]:
        """Build in the outer context, with no control dependencies (helper ops)."""
        g = self.graph
        old, g._flow_context = g._flow_context, self.outer
        try:
            with g.control_dependencies(None):
                yield
        finally:
            g._flow_context = old

    def prepare_inputs(self, inputs: list[Tensor]) -> list[Tensor]:
        return [self.add_value(t) if isinstance(t, Tensor) else t for t in inputs]

    def add_value(self, t: Tensor) -> Tensor:
        if in_context(t.op, self):
            return t
        inside = self.values.get(t)
        if inside is None:
            outer_t = self.outer.add_value(t) if self.outer is not None else t
            with self.outside():
                inside = self._bring_in(outer_t)
            inside.op._flow_context = self
            self.values[t] = inside
            self.values[inside] = inside
        return inside

    def _bring_in(self, t: Tensor) -> Tensor:
        raise NotImplementedError

    def pivot_op(self) -> Operation:
        raise NotImplementedError

    def add_op(self, op: Operation) -> None:
        op._flow_context = self
        if not op.inputs and not any(in_context(c, self) for c in op.control_inputs):
            self.graph._add_control_input(op, self.pivot_op())


class CondContext(FlowContext):
    """One branch of a cond: ``pred`` (the predicate's ``pred_id``), ``pivot`` (the
    ``switch_t`` / ``switch_f`` identity) and ``branch`` (1: true, 0: false)."""

    def __init__(self, graph: Graph, pred: Tensor, pivot: Tensor, branch: int) -> None:
        super().__init__(graph)
        self.pred, self.pivot, self.branch = pred, pivot, branch

    def _bring_in(self, t: Tensor) -> Tensor:
        return switch(t, self.pred)[self.branch]

    def pivot_op(self) -> Operation:
        return self.pivot.op


class WhileContext(FlowContext):
    """One while loop's frame: ``name`` (its frame name), its pivots, and its ops by role:
    ``enters`` / ``merges`` / ``switches`` / ``body_inputs`` / ``nexts`` / ``exits`` (one
    per loop variable), ``loop_cond``, and ``constants`` (outside tensor, its Enter)."""

    def __init__(self, graph: Graph, name: str, parallel_iterations: int) -> None:
        super().__init__(graph)
        self.name, self.parallel_iterations = name, parallel_iterations
        self.pivot_for_pred: Tensor | None = None
        self.pivot_for_body: Tensor | None = None
        self.enters: list = []
        self.merges: list = []
        self.switches: list = []
        self.body_inputs: list = []
        self.nexts: list = []
        self.exits: list = []
        self.loop_cond: Tensor | None = None
        self.constants: list = []
        self.grad: Any = None          # its gradient's bookkeeping (while_grad)

    def _bring_in(self, t: Tensor) -> Tensor:
        inside = enter(t, self.name, is_constant=True,
                       parallel_iterations=self.parallel_iterations)
        self.constants.append((t, inside))
        return inside

    def pivot_op(self) -> Operation:
        return (self.pivot_for_body if self.pivot_for_body is not None
                else self.pivot_for_pred).op

    def add_op(self, op: Operation) -> None:
        op._flow_context = self
        outside = [c for c in op.control_inputs if not in_context(c, self)]
        for c in outside:
            op.control_inputs.remove(c)
        free = all(_is_constant_enter(t.op) for t in op.inputs)
        if free and not op.control_inputs:
            self.graph._add_control_input(op, self.pivot_op())


def _is_constant_enter(op: Operation) -> bool:
    return op.op_def.extra.get("flow") == "enter" and bool(op.attrs.get("is_constant"))
