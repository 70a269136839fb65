"""Control ops: ``NoOp`` and ``group`` (an op that runs only for its control inputs)."""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Operation, Tensor, get_default_graph
from tfteach.framework.registry import ALL_TYPES, register_op
from tfteach.ops.common import no_output_fn

register_op("NoOp", no_output_fn, lambda ctx: None, gpu_types=ALL_TYPES, idle=True)


def no_op(name: str | None = None) -> Operation:
    return get_default_graph().create_op("NoOp", [], {}, name=name or "NoOp")


def group(*inputs: Any, name: str | None = None) -> Operation:
    """An op that depends on every input (tensors and ops); running it runs them all."""
    ops = []
    for i in inputs:
        if isinstance(i, (list, tuple)):
            ops.extend(i)
        elif i is not None:
            ops.append(i)
    ops = [o.op if isinstance(o, Tensor) else getattr(o, "op", o) if not isinstance(o, Operation)
           else o for o in ops]
    g = ops[0].graph if ops else get_default_graph()
    with g.as_default(), g.name_scope(name or "group_deps") as scope:
        by_device: dict[str, list] = {}
        for o in ops:
            by_device.setdefault(o.device, []).append(o)
        if len(by_device) <= 1:
            return _grouped(g, next(iter(by_device), ""), ops, scope)
        parts = [_grouped(g, d, by_device[d], None) for d in sorted(by_device)]
        with g.control_dependencies(parts):
            return no_op(name=scope)


def _grouped(g: Any, device: str, ops: list, name: str | None) -> Operation:
    """TF's one NoOp per device of a group: on the device its inputs share."""
    with g.control_dependencies(ops):
        if not device:
            return no_op(name=name)
        with g.device(device):
            return no_op(name=name)


def tuple_(tensors: list, name: str | None = None) -> list:
    """``tf.tuple``: identities of ``tensors`` that all wait for every one of them."""
    from tfteach.ops.array_ops import identity
    gate = group(*tensors, name=name)
    g = gate.graph
    with g.control_dependencies([gate]):
        return [identity(t) for t in tensors]
