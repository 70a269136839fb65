"""The gradient of a while loop, as TF 1.x builds it: a backward loop that runs the body's
gradient once per forward iteration, last iteration first.

``loop_gradient(ctx, exit_grads, body_gradients)`` (called by ``tf.gradients`` when it
reaches a loop's ``Exit`` ops) adds:

1. a counter to the forward loop (``Enter(0)``, ``Merge``, ``Switch``, ``+ 1``,
   ``NextIteration``, ``Exit``), once per loop: its index ``k`` in each iteration and the
   number of iterations ``n`` (TF's ``forward_index``);
2. a backward ``while_loop`` (frame ``<loop>/while_grad``) over ``n`` iterations carrying
   the gradient of each float loop variable and a sum per float tensor the loop reads from
   outside. Its body is ``body_gradients`` of the forward body (results -> inputs), built in
   a ``GradLoopContext``: a forward value that a gradient op reads comes from the loop's
   history (``LoopHistoryPush`` in the forward iteration, ``LoopHistoryRead`` with the
   backward index); a forward loop constant is read from outside directly.

Loops nest as in TF 1.x: a loop in another loop's body (or in a cond there) is one unit of
the outer body's gradient, so its backward loop is built inside the outer backward loop's
body, once per outer iteration. Its history is keyed by the iteration path (the enclosing
loops' indices, then its own; TF's stacks per outer iteration), and its iteration count,
an ``Exit`` of the outer body, is itself kept in the outer loop's history.

Supported: loops whose iteration count is whatever it is at run time (the counter counts
it), float loop variables (the gradient of an integer one is None, as in TF), conds inside
the body, loops nested to any depth, ``tf.gradients`` called inside a loop's body. As in
TF, a backward loop is not differentiated again (``TypeError``).
"""
from __future__ import annotations

from typing import Any, Callable

from tfteach.errors import with_hint
from tfteach.framework.graph import Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops
from tfteach.ops.control_flow_ops import enter, exit_, merge, next_iteration, switch
from tfteach.ops.flow_context import FlowContext, WhileContext, in_context
from tfteach.ops.loop_history_ops import history_push, history_read
from tfteach.ops.while_ops import build_loop

__all__ = ["loop_gradient", "loop_unit", "loop_plumbing", "enclosing_loop"]


def loop_unit(op: Any, within: FlowContext | None = None) -> WhileContext | None:
    """The outermost while loop ``op`` was built in inside ``within`` (a loop whose body is
    being differentiated, or None: the whole graph); None when ``op`` is in no such loop."""
    found, ctx = None, op._flow_context
    while ctx is not None and ctx is not within:
        if isinstance(ctx, WhileContext):
            found = ctx
        ctx = ctx.outer
    return found


def loop_plumbing(ctx: WhileContext) -> set:
    """The ops that carry ``ctx``'s loop variables into, between and out of its iterations
    (``Enter``, ``Merge``, ``Switch``, ``NextIteration``, ``Exit``): a gradient taken in one
    iteration does not go through them."""
    tensors = ctx.enters + ctx.merges + [s[0] for s in ctx.switches] + ctx.nexts + ctx.exits
    return {t.op for t in tensors}


def enclosing_loop(ctx: FlowContext | None) -> WhileContext | None:
    """The innermost while loop of the context ``ctx`` (None: outside every loop)."""
    while ctx is not None and not isinstance(ctx, WhileContext):
        ctx = ctx.outer
    return ctx


def _enclosing_loops(ctx: FlowContext) -> list[WhileContext]:
    """The while loops around ``ctx`` (not ``ctx`` itself), outermost first."""
    loops, c = [], ctx.outer
    while c is not None:
        if isinstance(c, WhileContext):
            loops.append(c)
        c = c.outer
    return loops[::-1]


def _counter(ctx: WhileContext) -> "_Counter":
    """The forward loop's iteration counter, built once per loop."""
    if ctx.grad is None:
        ctx.grad = _Counter(ctx)
    return ctx.grad


class _Counter:
    """The forward loop's iteration index ``index`` (inside) and count ``total`` (outside);
    ``add`` waits for every history push of its iteration."""

    def __init__(self, ctx: WhileContext) -> None:
        g = ctx.graph
        with g.name_scope(ctx.name.rsplit("/", 1)[0] + "/"):
            with ctx.outside():
                e = enter(array_ops.constant(0, name="f_count_start"), ctx.name,
                          parallel_iterations=ctx.parallel_iterations, name="f_count")
            e.op._flow_context = ctx
            with ctx.entered():
                m = merge([e, e], name="f_count_merge")[0]
                sw = switch(m, ctx.loop_cond, name="f_count_switch")
                self.index = array_ops.identity(sw[1], name="f_count_index")
                self.add = self.index + 1
                g._update_input(m.op, 1, next_iteration(self.add))
                self.total = exit_(sw[0], name="f_count_exit")


class GradLoopContext(WhileContext):
    """The backward loop's context: forward loop values come from the history."""

    def __init__(self, graph: Any, name: str, forward: WhileContext, counter: _Counter):
        super().__init__(graph, name, forward.parallel_iterations)
        self.forward, self.counter = forward, counter
        self.index: Tensor | None = None      # the backward loop's forward index (k - 1)
        self.reads: dict[Tensor, Tensor] = {}

    def add_value(self, t: Tensor) -> Tensor:
        fwd = self.forward
        if t.op._flow_context is fwd and t.op.op_def.extra.get("flow") == "enter" and \
                t.op.attrs.get("is_constant"):
            t = t.op.inputs[0]                 # a loop constant: read it from outside
        elif in_context(t.op, fwd):
            return self._from_history(t)
        return super().add_value(t)

    def _from_history(self, t: Tensor) -> Tensor:
        read = self.reads.get(t)
        if read is None:
            name = f"{t.op.name}_{t.value_index}"
            g, fwd = self.graph, self.forward
            outer = _enclosing_loops(fwd)
            old, g._flow_context = g._flow_context, fwd
            try:
                with g.control_dependencies(None):
                    push = history_push(self.counter.index, t, name,
                                        [_counter(w).index for w in outer])
            finally:
                g._flow_context = old
            g._add_control_input(self.counter.add.op, push.op)
            with self.entered(), g.control_dependencies(None):   # (an inner loop may ask)
                read = self.reads[t] = history_read(self.index, t, name,
                                                    [self._outer_index(w) for w in outer])
        return read

    def _outer_index(self, loop: WhileContext) -> Tensor:
        """The iteration of the enclosing forward ``loop`` that this backward loop runs in:
        the index of the backward loop of ``loop`` around it, or, built inside ``loop``
        itself (``tf.gradients`` in its body), the forward counter's."""
        c = self.outer
        while c is not None:
            if isinstance(c, GradLoopContext) and c.forward is loop:
                return c.index
            if c is loop:
                return _counter(loop).index
            c = c.outer
        raise nested_loop_error(self.forward.exits[0].op)


def loop_gradient(ctx: WhileContext, exit_grads: list, body_gradients: Callable) -> list:
    """``(tensor, gradient)`` for each tensor the loop ``ctx`` takes from outside (its loop
    variables' initial values, then the outside tensors it reads; one tensor may be both),
    given its exits' gradients;
    ``body_gradients(ys, xs, grad_ys)`` differentiates the forward body."""
    if isinstance(ctx, GradLoopContext):
        raise TypeError(with_hint("Second-order gradient for while loops not supported.", tr(
            "a gradient computed inside a while loop's body with a loop of its own cannot be "
            "differentiated again; take the outer gradient of a value computed without it.")))
    counter = _counter(ctx)
    g = ctx.graph
    floats = [i for i, e in enumerate(ctx.exits) if e.dtype.is_floating]
    consts = [(t, e) for t, e in ctx.constants if e.dtype.is_floating]
    seeds = [exit_grads[i] if exit_grads[i] is not None else array_ops.zeros_like(ctx.exits[i])
             for i in floats]
    accs = [array_ops.zeros_like(t) for t, _ in consts]
    n_f = len(floats)

    def cond(k: Tensor, *_: Tensor) -> Tensor:
        return k > 0

    def body(k: Tensor, *rest: Tensor) -> list:
        grad_ctx.index = k - 1
        ys = [ctx.nexts[i].op.inputs[0] for i in floats]
        xs = [ctx.body_inputs[i] for i in floats] + [e for _, e in consts]
        grads = body_gradients(ys, xs, list(rest[:n_f]), ctx)
        gs = [gr if gr is not None else array_ops.zeros_like(gy)
              for gr, gy in zip(grads[:n_f], rest[:n_f], strict=True)]
        sums = [a if gr is None else a + gr
                for a, gr in zip(rest[n_f:], grads[n_f:], strict=True)]
        return [grad_ctx.index] + gs + sums

    with g.name_scope("while_grad") as scope:
        grad_ctx = GradLoopContext(g, scope + "while_context", ctx, counter)
        out = build_loop(grad_ctx, cond, body, [counter.total] + seeds + accs)
    grads = [(ctx.enters[i].op.inputs[0], gr)
             for i, gr in zip(floats, out[1:1 + n_f], strict=True)]
    return grads + [(t, gr) for (t, _), gr in zip(consts, out[1 + n_f:], strict=True)]


def nested_loop_error(op: Any) -> LookupError:
    """A loop's gradient built where no iteration of an enclosing loop is known (neither in
    that loop's body nor in its gradient's)."""
    return LookupError(with_hint(
        f"Cannot differentiate the while loop of '{op.name}' outside the loop that holds it.",
        tr("call tf.gradients on the outer loop's results (or inside its body); a value "
           "of an inner loop has no gradient of its own outside that body.")))

