"""The device timeline: when each op ran on which device during one step.

``TimelineView(data, chrome_trace)`` takes ``Timeline(step_stats).to_data()`` (the
``application/vnd.tfteach.timeline+json`` payload: devices, ops, transfers, step_us, times in
microseconds from the step's first event) and the Chrome trace JSON of the same step.

The static picture is SVG drawn here (no plotting library): one lane per device, an axis in
step time, ops as bars coloured by op type (or by device), transfers as red arrows from the
sending lane to the receiving one, idle time as empty lane; every bar and arrow has a
tooltip with name, op, duration and bytes. The text form lists each lane's ops sorted by name
and the transfers sorted by tensor, so it does not depend on thread timing; only the step
time line changes between runs. ``save_chrome_trace(path)`` writes the trace for Perfetto or
chrome://tracing; the live controls have a button for it.
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tfteach.notebook.style import (TRANSFER_COLOR, colors_for, count, format_bytes, format_us,
                                    html_escape)
from tfteach.notebook.view import View

TIMELINE_MIME = "application/vnd.tfteach.timeline+json"
LABEL_W, PLOT_W, AXIS_H, LANE_H, LANE_GAP, PAD, LEGEND_H = 120, 720, 28, 24, 10, 12, 16
_saved = itertools.count(1)


def timeline_text(data: dict) -> str:
    """Lanes and transfers in a stable order, plus the step time."""
    counts = ", ".join(count(len(data[k]), k[:-1]) for k in ("devices", "ops", "transfers"))
    lines = [f"Timeline: {counts}; step took {format_us(data['step_us'])}"]
    short = {d["name"]: d["short"] for d in data["devices"]}
    for dev in data["devices"]:
        ops = sorted((o for o in data["ops"] if o["device"] == dev["name"]),
                     key=lambda o: o["name"])
        lines.append(f"  {dev['short']}: " + (", ".join(f"{o['name']} ({o['op']})" for o in ops)
                                              or "idle"))
    for t in sorted(data["transfers"], key=lambda t: (t["tensor"], t["dst_device"])):
        lines.append(f"  transfer {t['tensor']}: {short.get(t['src_device'], t['src_device'])}"
                     f" -> {short.get(t['dst_device'], t['dst_device'])} "
                     f"({format_bytes(t['bytes'])})")
    return "\n".join(lines)


# ---- SVG -------------------------------------------------------------------------------------
class _Geometry:
    """Maps step time and device lanes to pixels."""

    def __init__(self, data: dict) -> None:
        self.lanes = {d["name"]: i for i, d in enumerate(data["devices"])}
        self.step = max(1, int(data["step_us"]))
        self.legend_y = AXIS_H + len(self.lanes) * (LANE_H + LANE_GAP) + 4
        self.height = self.legend_y + LEGEND_H + PAD
        self.width = LABEL_W + PLOT_W + PAD

    def x(self, us: float) -> float:
        return LABEL_W + PLOT_W * us / self.step

    def lane_top(self, device: str) -> float:
        return AXIS_H + self.lanes[device] * (LANE_H + LANE_GAP)


def timeline_svg(data: dict, color_by: str = "type", show_transfers: bool = True) -> str:
    """The timeline as a standalone SVG document (text)."""
    g = _Geometry(data)
    short = {d["name"]: d["short"] for d in data["devices"]}
    key = (lambda o: o["op"]) if color_by == "type" else (lambda o: short[o["device"]])
    colors = colors_for([key(o) for o in data["ops"]] +
                        (list(short.values()) if color_by == "device" else []))
    body = _axis(g) + _lanes(data, g) + [_bar(o, g, colors[key(o)]) for o in data["ops"]]
    if show_transfers:
        body += [_arrow(t, g) for t in data["transfers"] if t["src_device"] in g.lanes
                 and t["dst_device"] in g.lanes]
    body += _legend(colors, g, show_transfers and bool(data["transfers"]))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{g.width}" height="{g.height}" '
             f'viewBox="0 0 {g.width} {g.height}" font-family="Helvetica,Arial,sans-serif" '
             'font-size="11">',
             '<defs><marker id="tfteach-tl-arrow" markerWidth="8" markerHeight="8" refX="7" refY="4" '
             f'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="{TRANSFER_COLOR}"/></marker></defs>',
             f'<rect width="{g.width}" height="{g.height}" fill="white"/>']
    parts += body
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _axis(g: _Geometry) -> list[str]:
    out = [f'<line x1="{LABEL_W}" y1="{AXIS_H - 6}" x2="{LABEL_W + PLOT_W}" y2="{AXIS_H - 6}" '
           'stroke="#888"/>']
    for i in range(5):
        us = g.step * i / 4
        x = g.x(us)
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        out.append(f'<line x1="{x:.1f}" y1="{AXIS_H - 10}" x2="{x:.1f}" y2="{AXIS_H - 6}" '
                   'stroke="#888"/>')
        out.append(f'<text x="{x:.1f}" y="{AXIS_H - 13}" text-anchor="{anchor}" '
                   f'fill="#555">{html_escape(format_us(us))}</text>')
    return out


def _lanes(data: dict, g: _Geometry) -> list[str]:
    out = []
    for d in data["devices"]:
        y = g.lane_top(d["name"])
        out.append(f'<rect x="{LABEL_W}" y="{y}" width="{PLOT_W}" height="{LANE_H}" '
                   'fill="#F4F4F4"/>')
        out.append(f'<text x="{LABEL_W - 8}" y="{y + LANE_H / 2 + 4}" text-anchor="end">'
                   f'<title>{html_escape(d["name"])}</title>{html_escape(d["short"])}</text>')
    return out


def _legend(colors: dict, g: _Geometry, transfers: bool) -> list[str]:
    """Rows of colour swatches (and the transfer arrow) under the lanes; grows ``g``."""
    out, x, y = [], float(LABEL_W), g.legend_y
    items = list(colors.items()) + ([("transfer", None)] if transfers else [])
    for label, color in items:
        width = 30 + 6.5 * len(label)
        if x + width > LABEL_W + PLOT_W and x > LABEL_W:
            x, y = float(LABEL_W), y + LEGEND_H
            g.height += LEGEND_H
        if color is None:
            out.append(f'<line x1="{x:.0f}" y1="{y + 6}" x2="{x + 14:.0f}" y2="{y + 6}" '
                       f'stroke="{TRANSFER_COLOR}" stroke-width="1.6" '
                       'marker-end="url(#tfteach-tl-arrow)"/>')
        else:
            out.append(f'<rect x="{x:.0f}" y="{y}" width="12" height="12" fill="{color}" '
                       'stroke="#333" stroke-width="0.4"/>')
        out.append(f'<text x="{x + 17:.0f}" y="{y + 10}">{html_escape(label)}</text>')
        x += width
    return out


def _bar(op: dict, g: _Geometry, color: str) -> str:
    x0, x1 = g.x(op["start_us"]), g.x(op["end_us"])
    y = g.lane_top(op["device"]) + 2
    tip = (f'{op["name"]} ({op["op"]})\n{format_us(op["end_us"] - op["start_us"])} from '
           f'{format_us(op["start_us"])}\noutput: {format_bytes(op["bytes"])}')
    return (f'<rect x="{x0:.1f}" y="{y}" width="{max(1.5, x1 - x0):.1f}" height="{LANE_H - 4}" '
            f'fill="{color}" stroke="#333" stroke-width="0.4"><title>{html_escape(tip)}'
            '</title></rect>')


def _arrow(t: dict, g: _Geometry) -> str:
    x0, x1 = g.x(t["start_us"]), g.x(t["end_us"])
    y0 = g.lane_top(t["src_device"]) + LANE_H / 2
    y1 = g.lane_top(t["dst_device"]) + LANE_H / 2
    tip = (f'transfer {t["tensor"]}: {format_bytes(t["bytes"])}, '
           f'{format_us(t["end_us"] - t["start_us"])}')
    return (f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" '
            f'stroke="{TRANSFER_COLOR}" stroke-width="1.6" marker-end="url(#tfteach-tl-arrow)">'
            f'<title>{html_escape(tip)}</title></line>')


# ---- the view ----------------------------------------------------------------------------------
class TimelineView(View):
    """One step's device timeline: static SVG + JSON + text, live controls, trace export."""

    MIME = TIMELINE_MIME
    COLOR_CHOICES = (("op type", "type"), ("device", "device"))

    def __init__(self, data: dict, chrome_trace: str | None = None) -> None:
        super().__init__()
        self.data = data
        self.chrome_trace = chrome_trace

    @classmethod
    def from_step_stats(cls, step_stats: Any) -> "TimelineView":
        from tfteach.timeline import Timeline

        timeline = Timeline(step_stats)
        return cls(timeline.to_data(), timeline.generate_chrome_trace_format())

    def payload(self) -> dict:
        return self.data

    def text(self) -> str:
        return timeline_text(self.data)

    def svg(self, color_by: str | None = None, show_transfers: bool | None = None) -> str:
        return timeline_svg(self.data, color_by or self.color_by,
                            self.show_transfers if show_transfers is None else show_transfers)

    def save_chrome_trace(self, path: str | Path | None = None) -> Path:
        """Write the Chrome trace JSON (open it in https://ui.perfetto.dev); returns the path."""
        if self.chrome_trace is None:
            raise ValueError("This timeline has no Chrome trace (it was built from data only).")
        target = Path(path) if path is not None else Path(f"timeline-{next(_saved)}.json")
        target.write_text(self.chrome_trace)
        return target

    def extra_controls(self) -> list:
        import ipywidgets as w

        button = w.Button(description="Save Chrome trace", icon="download",
                          tooltip="write the step's trace as JSON for Perfetto",
                          layout=w.Layout(width="auto"))
        where = w.HTML()

        def save(_: Any) -> None:
            path = self.save_chrome_trace()
            where.value = (f'saved <a href="{html_escape(path.name)}" target="_blank">'
                           f'{html_escape(str(path))}</a>: open it in ui.perfetto.dev')

        button.on_click(save)
        return [button, where]
