"""The placement view: which device every op of a graph was assigned to.

``placement_data(ops, assigned, devices)`` builds the ``application/vnd.tfteach.placement+json``
payload that the JupyterLab renderer draws::

    {"nodes":   [{"name", "type", "requested_device", "assigned_device"}],   # graph order
     "edges":   [{"src", "dst", "cross_device", "bytes"}],   # data edges; bytes None if unknown
     "devices": [{"name", "device_type", "description"}]}     # the session's, sorted

``PlacementView(data)`` draws it with Graphviz: nodes coloured by device or job (``palette``'s
device colours, in the payload's device order, as the extension does) or by op type (greys,
bordered differently past the fourth type), each label in the colour that contrasts with
its fill; boxed by job, task (only when there are several) and device, cross-device edges
(transfers) thick and red with their size, requested vs assigned device in each node's
tooltip; control flow's ops have shapes of their own (``FLOW_SHAPES``) and a loop's back
edge is dashed; the legend lists the colours the graph uses. Its text
form is one ``name (Type) -> device`` line per node, in graph order. No state beyond the view
settings (see ``tfteach.notebook.view``).
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from tfteach.i18n import N_, tr
from tfteach.notebook import graphviz_svg
from tfteach.notebook.graphviz_svg import escape
from tfteach.notebook.palette import TRANSFER_COLOR, device_fill, label_color, op_style
from tfteach.notebook.style import format_bytes
from tfteach.notebook.view import View
from tfteach.timeline import short_device

PLACEMENT_MIME = "application/vnd.tfteach.placement+json"


# ---- the payload ----------------------------------------------------------------------------
def placement_data(ops: Iterable[Any], assigned: dict[str, Any], devices: Iterable[Any]) -> dict:
    """The placement payload of ``ops`` (graph order) placed as ``assigned`` (op name ->
    Device, or full device name) on a session with ``devices`` (objects with name,
    device_type and maybe description)."""
    where = {name: getattr(d, "name", d) for name, d in assigned.items()}
    ops = [op for op in ops if op.name in where]
    nodes = [{"name": op.name, "type": op.type, "requested_device": op.device or "",
              "assigned_device": where[op.name]} for op in ops]
    edges = [{"src": t.op.name, "dst": op.name,
              "cross_device": where[t.op.name] != where[op.name], "bytes": tensor_bytes(t)}
             for op in ops for t in op.inputs if t.op.name in where]
    return {"nodes": nodes, "edges": edges, "devices": _device_list(devices, where)}


def _device_list(devices: Iterable[Any], where: dict[str, str]) -> list[dict]:
    seen = {d.name: {"name": d.name, "device_type": d.device_type,
                     "description": getattr(d, "description", "") or ""} for d in devices}
    for name in where.values():
        seen.setdefault(name, {"name": name, "device_type": _parts(name)[2].split(":")[0],
                               "description": ""})
    return [seen[name] for name in sorted(seen)]


def tensor_bytes(tensor: Any) -> int | None:
    """Bytes of a tensor of fully known shape and fixed-size dtype, else None (tfteach's
    tensors, and TensorFlow's for ``--backend tensorflow``)."""
    shape = tensor.shape
    if not shape.is_fully_defined():
        return None
    own = getattr(tensor.dtype, "np", None)
    dtype = np.dtype(tensor.dtype.as_numpy_dtype if own is None else own)
    if dtype.kind in "OSU":
        return None
    n = shape.num_elements()
    return None if n is None else int(n) * int(dtype.itemsize)


def placement_text(data: dict) -> str:
    """One ``name (Type) -> device`` line per node, in graph order."""
    return "\n".join(f"{n['name']} ({n['type']}) -> {short_device(n['assigned_device'])}"
                     for n in data["nodes"])


# ---- Graphviz ---------------------------------------------------------------------------------
def _parts(device: str) -> tuple[str, str, str]:
    """(job, task, device) fields of a full device name."""
    fields = dict(p.split(":", 1) for p in device.strip("/").split("/") if ":" in p)
    return fields.get("job", ""), fields.get("task", ""), fields.get("device", device)


def _color_key(node: dict, color_by: str) -> str:
    if color_by == "type":
        return node["type"]
    job, task, _ = _parts(node["assigned_device"])
    return f"{job}:{task}" if color_by == "job" else node["assigned_device"]


_BORDERS = {"solid": "", "stripes": ",dashed", "dots": ",dotted"}


def node_colors(data: dict, color_by: str) -> dict[str, tuple[str, str]]:
    """Colour key -> (fill, extra Graphviz style). Devices in the payload's device order
    (then devices seen only on nodes), so a device keeps its colour from view to view; jobs
    in sorted order; op types as greys, with dashed or dotted borders past the fourth."""
    if color_by == "type":
        types = sorted({n["type"] for n in data["nodes"]})
        return {k: (op_style(i)[0], _BORDERS[op_style(i)[1]]) for i, k in enumerate(types)}
    names = [d["name"] for d in data["devices"]]
    names += sorted({n["assigned_device"] for n in data["nodes"]} - set(names))
    keys = list(dict.fromkeys(_color_key({"assigned_device": n, "type": ""}, color_by)
                              for n in names))
    if color_by == "job":
        keys.sort()
    return {k: (device_fill(i), "") for i, k in enumerate(keys)}


def placement_dot(data: dict, color_by: str = "device", show_transfers: bool = True) -> str:
    """The DOT source of the placement picture."""
    colors = node_colors(data, color_by)
    lines = ['digraph placement {', 'rankdir=TB; compound=true; newrank=true;',
             'graph [fontname="Helvetica", fontsize=11, style=rounded, color="#888888"];',
             'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
             'penwidth=0.8];', 'edge [color="#555555", arrowsize=0.6, fontname="Helvetica", '
             'fontsize=9];']
    lines += _clusters(data, colors, color_by)
    lines += _edges(data, show_transfers)
    used = dict.fromkeys(_color_key(n, color_by) for n in data["nodes"])
    lines += _legend({k: colors[k] for k in colors if k in used}, color_by)
    lines.append("}")
    return "\n".join(lines)


# Control flow's ops by shape: a cond's or loop's Switch and Merge as diamonds, a loop's
# Enter and Exit as the frame's doors; the NextIteration back edge is dashed and does not
# rank the layout (the drawing stays top to bottom).
FLOW_SHAPES = {"Switch": "diamond", "RefSwitch": "diamond", "Merge": "diamond",
               "Enter": "invhouse", "RefEnter": "invhouse", "Exit": "house",
               "NextIteration": "cds", "LoopCond": "octagon"}


def _node_line(node: dict, colors: dict, color_by: str) -> str:
    tip = (f"{node['name']} ({node['type']})\nrequested: {node['requested_device'] or '(any)'}"
           f"\nassigned: {node['assigned_device']}")
    label = node["name"] if node["name"] == node["type"] else f"{node['name']}\n{node['type']}"
    shape = FLOW_SHAPES.get(node["type"])
    shape = f", shape={shape}" if shape else ""
    return (f'"{escape(node["name"])}" [label="{escape(label)}", tooltip="{escape(tip)}", '
            f'{_fill_attrs(*colors[_color_key(node, color_by)])}{shape}];')


def _fill_attrs(fill: str, border: str) -> str:
    """Fill, contrasting label colour and (for hatched op types) border style of a node."""
    style = f', style="rounded,filled{border}"' if border else ""
    return f'fillcolor="{fill}", fontcolor="{label_color(fill)}"{style}'


def _clusters(data: dict, colors: dict, color_by: str) -> list[str]:
    """Nodes boxed by job/task (only if several) and device, in a stable order."""
    tree: dict[tuple, dict[str, list[dict]]] = {}
    for node in data["nodes"]:
        job, task, dev = _parts(node["assigned_device"])
        tree.setdefault((job, task), {}).setdefault(dev, []).append(node)
    several = len(tree) > 1
    lines: list[str] = []
    for i, (job_task, by_device) in enumerate(sorted(tree.items())):
        if several:
            lines.append(f'subgraph "cluster_task_{i}" {{ label="/job:{job_task[0]}/task:'
                         f'{job_task[1]}"; style="rounded,dashed";')
        for j, (dev, nodes) in enumerate(sorted(by_device.items())):
            lines.append(f'subgraph "cluster_dev_{i}_{j}" {{ label="{escape(dev)}"; '
                         'style="rounded,filled"; fillcolor="#F7F7F7";')
            lines += [_node_line(n, colors, color_by) for n in nodes]
            lines.append("}")
        if several:
            lines.append("}")
    return lines


def _edges(data: dict, show_transfers: bool) -> list[str]:
    lines = []
    types = {n["name"]: n["type"] for n in data["nodes"]}
    for e in data["edges"]:
        ends = f'"{escape(e["src"])}" -> "{escape(e["dst"])}"'
        if types.get(e["src"]) == "NextIteration":
            lines.append(f"{ends} [style=dashed, constraint=false];")
        elif not e["cross_device"]:
            lines.append(f"{ends};")
        elif show_transfers:
            size = format_bytes(e["bytes"])
            lines.append(f'{ends} [color="{TRANSFER_COLOR}", penwidth=2.2, '
                         f'fontcolor="{TRANSFER_COLOR}", label=" {size}", '
                         f'tooltip="{escape(_transfer_tip(e["src"], e["dst"], size))}"];')
        else:
            lines.append(f"{ends} [style=invis];")
    return lines


def _legend(colors: dict, color_by: str) -> list[str]:
    """A boxed key of the colours (plain nodes: the WebAssembly Graphviz has no HTML labels)."""
    title = {"device": tr("device"), "job": "job:task", "type": tr("op type")}[color_by]
    key = escape(graphviz_svg.fit_wide(tr("colour = {what}", what=title)))
    lines = [f'subgraph "cluster_legend" {{ label="{key}"; style="rounded"; '
             'color="#BBBBBB"; node [shape=box, style="filled", fontsize=9, height=0.2];']
    lines += [f'"__legend_{i}" [label="{escape(_legend_label(k, color_by))}", '
              f'{_fill_attrs(fill, border).replace("rounded,", "")}];'
              for i, (k, (fill, border)) in enumerate(colors.items())]
    if len(colors) > 1:
        chain = " -> ".join(f'"__legend_{i}"' for i in range(len(colors)))
        lines.append(f"{{ rank=same; {chain} [style=invis]; }}")
    lines.append("}")
    return lines


def _transfer_tip(src: str, dst: str, size: str) -> str:
    return tr("transfer {src} -> {dst}: {size}", src=src, dst=dst, size=size)


def _legend_label(key: str, color_by: str) -> str:
    return short_device(key) if color_by == "device" else key


# ---- the view ---------------------------------------------------------------------------------
class PlacementView(View):
    """A placed graph: static SVG + JSON + text, and live colour/transfer controls."""

    MIME = PLACEMENT_MIME
    COLOR_CHOICES = ((N_("device"), "device"), (N_("job"), "job"), (N_("op type"), "type"))

    def __init__(self, data: dict, graphviz_backend: str | None = None) -> None:
        super().__init__()
        self.data = data
        self.graphviz_backend = graphviz_backend
        self._svgs: dict[tuple, str] = {}

    def payload(self) -> dict:
        return self.data

    def text(self) -> str:
        return placement_text(self.data)

    def dot(self, color_by: str | None = None, show_transfers: bool | None = None) -> str:
        return placement_dot(self.data, color_by or self.color_by,
                             self.show_transfers if show_transfers is None else show_transfers)

    def svg(self, color_by: str | None = None, show_transfers: bool | None = None) -> str:
        key = (color_by or self.color_by,
               self.show_transfers if show_transfers is None else show_transfers)
        if key not in self._svgs:
            self._svgs[key] = graphviz_svg.render_svg(self.dot(*key), self.graphviz_backend)
        return self._svgs[key]

    @property
    def devices(self) -> dict[str, str]:
        """op name -> assigned device (full name)."""
        return {n["name"]: n["assigned_device"] for n in self.data["nodes"]}
