"""The graph each device runs in a step: TF's ``RunMetadata.partition_graphs``, from a plan.

A local session asked for ``RunOptions(output_partition_graphs=True)`` returns one
``GraphDef`` per device the step used (sorted by device name), holding:

- the ops the step runs there (name, type, device, attrs), each input renamed to the node
  that provides it inside the partition;
- for every tensor that crosses devices (a plan's ``_Transfer``), a ``_Send`` on the
  producer's device and a ``_Recv`` on the consumer's, named ``<producer>/_<n>`` with TF's
  counter and joined by the same ``tensor_name`` (``edge_<n>_<producer>``);
- TF's call-frame nodes: an ``_Arg`` per fed tensor (``_arg_<op>_<output>_<i>``), which
  replaces the fed op, and a ``_Retval`` per fetched tensor (``_retval_<op>_<output>_<i>``).

A control input from another device is left out (TF sends a dummy tensor for it), and the
``edge_`` numbers are not TF's graph edge ids.
"""
from __future__ import annotations

from collections import defaultdict

from tfteach.framework.node_def import GraphDef, NodeDef
from tfteach.runtime.plan import Plan, PlanNode


def partition_graphs(plan: Plan) -> list[GraphDef]:
    """One GraphDef per device of ``plan``: its ops, _Send/_Recv pairs, _Arg and _Retval."""
    refs: dict[int, str] = {}           # slot -> the input string that names its producer
    parts: dict[str, list[NodeDef]] = defaultdict(list)
    for i, (t, slot) in enumerate(plan.feed_slots.items()):
        refs[slot] = f"_arg_{t.op.name}_{t.value_index}_{i}"
        parts[plan.slot_device[slot].name].append(
            NodeDef(refs[slot], "_Arg", plan.slot_device[slot].name, [], {"index": i}))
    sent, placed = 0, {}                # placed: op name -> device
    for node in plan.nodes:
        if node.transfer is not None:
            _add_transfer(node, sent, refs, parts)
            sent += 2
        else:
            _add_op(node, refs, parts, placed)
    fetched = dict.fromkeys(s for s in plan.fetch_slots if s is not None)
    for i, slot in enumerate(fetched):
        op_name, index = plan.slot_names[slot].rsplit(":", 1)
        device = plan.slot_device[slot].name
        parts[device].append(NodeDef(f"_retval_{op_name}_{index}_{i}", "_Retval", device,
                                     [refs[slot]], {"index": i}))
    return [GraphDef(parts[d]) for d in sorted(parts)]


def _add_op(node: PlanNode, refs: dict, parts: dict, placed: dict) -> None:
    device = placed[node.name] = node.device.name
    d = NodeDef.of(node.op, device)
    d.input = [refs[s] for s in node.in_slots] + \
        [f"^{c.name}" for c in node.op.control_inputs if placed.get(c.name) == device]
    parts[device].append(d)
    for k, slot in enumerate(node.out_slots):
        if slot >= 0:
            refs[slot] = node.name if k == 0 else f"{node.name}:{k}"


def _add_transfer(node: PlanNode, n: int, refs: dict, parts: dict) -> None:
    """``_Send`` (number ``n``) on the source device, ``_Recv`` (``n + 1``) on the node's."""
    src, dst = node.transfer[1].name, node.device.name
    source = refs[node.in_slots[0]]
    producer = source.split(":")[0]
    attr = {"tensor_name": f"edge_{n}_{producer}", "send_device": src, "recv_device": dst,
            "client_terminated": False}
    parts[src].append(NodeDef(f"{producer}/_{n}", "_Send", src, [source], dict(attr)))
    recv = f"{producer}/_{n + 1}"
    parts[dst].append(NodeDef(recv, "_Recv", dst, [], dict(attr)))
    refs[node.out_slots[0]] = recv
