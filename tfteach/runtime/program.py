"""Straight-line programs: how the caller's thread runs an inline plan.

An inline plan (``Plan.run_inline``: no waiting kernels, host devices only, expensive
kernels on one device) has nothing that could overlap, so its order is fixed once, when the
plan is built: the threaded executor's depth-first order (the last ready node first). With
the order fixed, so is the last read of every value, and a step needs no pending counts or
use counters. A ``Program`` is that order compiled into instructions
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

from dataclasses import dataclass
from typing import Any

SMALL_CONSTANT = 1024   # bytes: constants up to this size are folded


@dataclass
class Program:
    instrs: list      # (PlanNode, input slots, keep, drops), in the order run
    fetch_slots: list  # where each fetched value is after the run (None for ops)
    uses: list        # reads of each slot in a step (fetches count once)
    constants: list   # folded constants: (node, slot, value), stored before the first instr
    budget: list      # per slot, the device budget its bytes count against, or None


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
    return Program(_instructions(kept, uses, budget), fetch, uses,
                   [(n, n.out_slots[0], v) for n, v in constants], budget)


def _fold(node: Any, constants: list) -> bool:
    """Fold ``node`` away if it is a small constant or a NoOp; say if it was."""
    outs = node.out_slots
    if node.type == "NoOp" and not outs:
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
