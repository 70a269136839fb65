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
``SMALL_CONSTANT`` bytes, which no memory picture shows) folded into the step's initial
values (big ones still run, so their bytes count against the device while in use) and
``NoOp``s dropped; both programs count the same bytes at the same points. Removing a node
from a topological order keeps every other node's relative order, so control
dependencies still hold. ``alias`` (slot forwarding) is the hook for forwarding more.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SMALL_CONSTANT = 1024   # bytes: constants up to this size are folded and not counted


@dataclass
class Program:
    instrs: list      # (PlanNode, input slots, keep, drops), in the order run
    fetch_slots: list  # where each fetched value is after the run (None for ops)
    uses: list        # reads of each slot in a step (fetches count once)
    initial: list     # slot values set before the first instruction (folded constants)
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
    alias: dict[int, int] = {}
    initial: list = [None] * plan.n_slots
    kept = []
    for node in order:
        ins = [alias.get(s, s) for s in node.in_slots]
        if fold and _fold(node, ins, alias, initial):
            continue
        kept.append((node, ins))
    fetch = [None if s is None else alias.get(s, s) for s in plan.fetch_slots]
    uses = [0] * plan.n_slots
    for _, ins in kept:
        for s in ins:
            uses[s] += 1
    for s in fetch:
        if s is not None:
            uses[s] += 1
    fed = set(plan.feed_slots.values())
    budget = [None if s in fed or not uses[s] or initial[s] is not None
              else plan.slot_device[s].memory for s in range(plan.n_slots)]
    return Program(_instructions(kept, uses, budget), fetch, uses, initial, budget)


def _fold(node: Any, ins: list, alias: dict, initial: list) -> bool:
    """Fold ``node`` away if it is a small constant or a NoOp; say if it was."""
    outs = node.out_slots
    if node.type == "NoOp" and not outs:
        return True
    if node.type == "Const" and len(outs) == 1 and outs[0] >= 0:
        value = node.kernel(node.ctx)
        if getattr(value, "nbytes", 0) > SMALL_CONSTANT:
            return False        # a big constant takes device memory while the step uses it
        initial[outs[0]] = value
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
