"""The nodes the master's partitioner adds to a task's part of a step.

Parts are graphs of ``tfteach.framework.node_def.NodeDef`` (tfteach's one IR). The
constructors here make the nodes the partitioner and the phases add (``send``, ``recv``,
``placeholder``, ``control_const``); each sets its attrs in one place, in ``graph_io``'s
encoding. ``carries_control`` marks the nodes that carry a control edge between tasks (a
dummy scalar); it never goes on the wire.
"""
from __future__ import annotations

from typing import Any

from tfteach.distributed.contract import transport_ops  # noqa: F401 - registers _Send and _Recv, which ``send``/``recv`` make
from tfteach.framework.graph import Tensor
from tfteach.framework.node_def import NodeDef

SEND = "_Send"
RECV = "_Recv"
_ZERO_F32 = {"array": "AAAAAA==", "dtype": "<f4", "shape": []}   # float32 0.0, base64
_F32 = {"dtype": "float32"}
_SCALAR = {"shape": []}


def tensor_types(t: Tensor) -> tuple[dict, dict]:
    """A tensor's ``dtype`` and ``shape`` attrs, as a Placeholder or ``_Recv`` holds them."""
    return dtype_attr(t.dtype.name), shape_attr(t.shape.dims)


def dtype_attr(name: str) -> dict:
    return {"dtype": name}


def shape_attr(dims: Any) -> dict:
    return {"shape": None if dims is None else list(dims)}


def send(name: str, device: str, tensor: str, key: str, dtype: dict,
         carries_control: bool = False) -> NodeDef:
    """A ``_Send`` of ``tensor`` under rendezvous ``key`` (``dtype``: its dtype attr)."""
    return NodeDef(name, SEND, device, [tensor], {"key": key, "T": dtype},
                   carries_control=carries_control)


def recv(name: str, device: str, key: str, types: tuple[dict, dict], src_device: str,
         src_task: str, src_address: str, tensor: str,
         carries_control: bool = False) -> NodeDef:
    """A ``_Recv`` of ``tensor`` (``types``: its dtype and shape attrs) sent from
    ``src_device`` of task ``src_task`` (at ``src_address``; "" within the task)."""
    return NodeDef(name, RECV, device, [], {
        "key": key, "dtype": types[0], "shape": types[1], "src_device": src_device,
        "src_task": src_task, "src_address": src_address, "tensor": tensor},
        carries_control=carries_control)


def placeholder(name: str, device: str, dtype: dict, shape: dict) -> NodeDef:
    """A Placeholder the master feeds (a fed tensor, a carried value, a tensor sent)."""
    return NodeDef(name, "Placeholder", device, [], {"dtype": dtype, "shape": shape})


def control_const(name: str, device: str, after: str) -> NodeDef:
    """The dummy float32 scalar that runs after op ``after`` and is sent in place of a
    control edge to another task."""
    return NodeDef(name, "Const", device, [f"^{after}"],
                   {"value": _ZERO_F32, "dtype": dict(_F32)}, carries_control=True)


def control_types() -> tuple[dict, dict]:
    """The dtype and shape attrs of ``control_const``'s value."""
    return dict(_F32), dict(_SCALAR)
