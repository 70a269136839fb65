"""Straight-line programs: the executor's synchronous path, compiled for an inline plan.

An inline plan (``Plan.run_inline``: no waiting kernels, host devices only, expensive
kernels on one device) has nothing that could overlap, so its order is fixed once, when the
plan is built: the order the executor's synchronous ready-queue path takes (depth-first:
the last ready node first; ``tests/runtime/test_executor_paths.py`` checks that both give
the same values). With the order fixed, so is the last read of every value, and a step
needs no pending counts or use counters. A ``Program`` is that order compiled into instructions
``(node, input slots, keep, drops)``: ``keep`` gives, per output slot, the device budget
its bytes count against (None: not counted, e.g. nobody reads it); ``drops`` lists the
slots whose last read this is, each with the budget to return its bytes to (None for fed
values and constants).

Each inline plan has two programs. ``full`` runs every node and is used when a step is
traced or a device is slowed, so timelines show every op. ``fast`` is what TF's graph
optimizer would give the executor: small constants (scalars, shapes, up to
``SMALL_CONSTANT`` bytes) folded (the step stores them before the first instruction,
counting their bytes against their device until their last read, as a device holds its
constants) and ``NoOp``s dropped. Big constants still run where they are, so a
step's peak memory is the same, give or take those few bytes. Removing a node
from a topological order keeps every other node's relative order, so control
dependencies still hold.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Callable

SMALL_CONSTANT = 1024   # bytes: constants up to this size are folded


@dataclass
class Program:
    instrs: list      # (PlanNode, input slots, keep, drops), in the order run
    fetch_slots: list  # where each fetched value is after the run (None for ops)
    uses: list        # reads of each slot in a step (fetches count once)
    constants: list   # folded constants: (node, slot, value), stored before the first instr
    budget: list      # per slot, the device budget its bytes count against, or None
    run: Callable[[list], None] | None = None  # constants + instructions as one function
    lines: list | None = None                  # first source line of each, in ``run``
    line_nodes: list | None = None             # the node of each of those lines

    def node_at(self, error: BaseException) -> Any:
        """The node whose constant or instruction raised ``error`` inside ``run`` (None if
        elsewhere)."""
        tb = error.__traceback__
        line = None
        while tb is not None:
            if self.run is not None and tb.tb_frame.f_code is self.run.__code__:
                line = tb.tb_lineno
            tb = tb.tb_next
        if line is None:
            return None
        return self.line_nodes[bisect.bisect_right(self.lines, line) - 1]


def depth_first_order(plan: Any) -> list:
    """The plan's nodes in the order the executor's depth-first loop would run them."""
    pending = [n.pending for n in plan.nodes]
    stack = list(plan.ready)
    order = []
    while stack:
        node = plan.nodes[stack.pop()]
        order.append(node)
        for c in node.consumers:
            pending[c] -= 1
            if pending[c] == 0:
                stack.append(c)
    return order


def compile_program(plan: Any, order: list, fold: bool) -> Program:
    """The instructions for ``order``; with ``fold``, without small constants and NoOps."""
    constants: list = []
    kept = []
    for node in order:
        ins = list(node.in_slots)
        if fold and _fold(node, constants):
            continue
        kept.append((node, ins))
    fetch = list(plan.fetch_slots)
    uses = [0] * plan.n_slots
    for _, ins in kept:
        for s in ins:
            uses[s] += 1
    for s in fetch:
        if s is not None:
            uses[s] += 1
    fed = set(plan.feed_slots.values())
    budget = [None if s in fed or not uses[s] else plan.slot_device[s].memory
              for s in range(plan.n_slots)]
    program = Program(_instructions(kept, uses, budget), fetch, uses,
                      [(n, n.out_slots[0], v) for n, v in constants], budget)
    if fold:
        program.run, program.lines, program.line_nodes = straight_line(
            program.instrs, [(n, s, v, budget[s]) for n, s, v in program.constants])
    return program


def _fold(node: Any, constants: list) -> bool:
    """Fold ``node`` away if it is a small constant or an idle op without outputs (a NoOp);
    say if it was."""
    outs = node.out_slots
    if node.op_def is not None and node.op_def.idle and not outs:
        return True
    if node.type == "Const" and len(outs) == 1 and outs[0] >= 0:
        value = node.kernel(node.ctx)
        if getattr(value, "nbytes", 0) > SMALL_CONSTANT:
            return False
        constants.append((node, value))
        return True
    return False


def _instructions(kept: list, uses: list, budget: list) -> list:
    left = list(uses)
    instrs = []
    for node, ins in kept:
        keep = tuple(budget[s] if s >= 0 else None for s in node.out_slots)
        drops = []
        for s in ins:
            left[s] -= 1
            if left[s] == 0:
                drops.append((s, budget[s]))
        instrs.append((node, ins, keep, tuple(drops)))
    return instrs


def straight_line(instrs: list, constants: list = ()) -> tuple[Callable[[list], None], list,
                                                                list]:
    """``instrs`` as the source of one function ``run(values)``, compiled: first a line per
    folded constant (``(node, slot, value, budget)``: its store and byte count), then a
    line per kernel call, byte count and drop, with kernels, contexts, constants and budgets
    bound as globals. It does what the executor's loop does per constant and instruction
    (``_keep``, kernel, drops) without the loop's per-node dispatch. Returns the function,
    the first line of each constant and instruction, and their nodes (``Program.node_at``
    maps an error's line back to its node)."""
    from .executor import _keep

    env: dict[str, Any] = {"_keep": _keep, "getattr": getattr}
    src = ["def run(values):"]
    lines, nodes = [], []
    for j, (node, s, value, budget) in enumerate(constants):
        lines.append(len(src) + 1)
        nodes.append(node)
        env[f"V{j}"] = value
        if budget is not None and getattr(value, "nbytes", 0):
            env[f"BV{j}"], env[f"MV{j}"], env[f"DV{j}"] = budget, node.name, node.device.name
            src.append(f"    BV{j}.take({value.nbytes}, V{j}, MV{j}, DV{j})")
        src.append(f"    values[{s}] = V{j}")
    for i, (node, ins, keep, drops) in enumerate(instrs):
        lines.append(len(src) + 1)
        nodes.append(node)
        env[f"K{i}"], env[f"C{i}"], env[f"O{i}"] = node.kernel, node.ctx, node.op
        deref = node.deref or (False,) * len(ins)
        args = "".join(f", values[{s}].read(O{i})" if d else f", values[{s}]"
                       for s, d in zip(ins, deref, strict=True))
        src.append(f"    o = K{i}(C{i}{args})")
        src += _store(i, node, keep, env)
        for k, (s, budget) in enumerate(drops):
            if budget is not None:
                env[f"B{i}_{k}"] = budget
                src.append(f"    B{i}_{k}.used -= getattr(values[{s}], 'nbytes', 0)")
            src.append(f"    values[{s}] = None")
    src.append("    return None")
    code = compile("\n".join(src), "<tfteach program>", "exec")
    exec(code, env)  # noqa: S102 (source built above from slot numbers only)
    return env["run"], lines, nodes


def _store(i: int, node: Any, keep: tuple, env: dict) -> list[str]:
    """Source lines storing instruction ``i``'s output ``o`` as ``_keep`` would."""
    if len(node.out_slots) != 1:
        if not node.out_slots:
            return []
        env[f"N{i}"], env[f"P{i}"] = node, keep
        return [f"    _keep(N{i}, P{i}, o, values)"]
    s, budget = node.out_slots[0], keep[0]
    if s < 0:
        return []
    out = []
    if budget is not None:
        env[f"B{i}"], env[f"M{i}"], env[f"D{i}"] = budget, node.name, node.device.name
        out += ["    if getattr(o, 'nbytes', 0):",
                f"        B{i}.take(o.nbytes, o, M{i}, D{i})"]
    return out + [f"    values[{s}] = o"]
