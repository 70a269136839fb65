"""The device timeline: when each op ran on which device during one step.

``TimelineView(data, chrome_trace)`` takes ``Timeline(step_stats).to_data()`` (the
``application/vnd.tfteach.timeline+json`` payload: devices, ops, transfers, step_us, times in
microseconds from the step's first event) and the Chrome trace JSON of the same step.

The static picture is SVG drawn here (no plotting library): one lane per device, an axis in
step time, each lane label (elided past ``MAX_LABEL_CHARS``, the full name in its tooltip)
with its device's colour; ops as bars, by op type hatched greys (``palette``: never a device
colour) or by device the device colours; each transfer as a red slice in a thin band at the
top of the receiving lane, an arrow from the end of the producer's bar to the slice and
arrows from the slice's end into each consumer's bar (``transfer_arrows``: the geometry the
extension draws too); every bar and slice has a tooltip. The text form lists each lane's ops sorted by name
and the transfers sorted by tensor, so it does not depend on thread timing; only the step
time line changes between runs. ``save_chrome_trace(path)`` writes the trace for Perfetto or
chrome://tracing; the live controls have a button for it. A modelled step
(``tfteach.hardware.predict``, ``%%placement --model``) carries ``modelled_on`` (the profile):
its text starts with a caption saying so, and its picture is marked "modelled".
"""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from tfteach.i18n import N_, clauses, tr, trn
from tfteach.notebook.palette import OP_FILLS, TRANSFER_COLOR, device_fill, label_color, op_style
from tfteach.notebook.style import display_width, format_bytes, format_us, html_escape
from tfteach.notebook.view import View

TIMELINE_MIME = "application/vnd.tfteach.timeline+json"
PLOT_W, AXIS_H, LANE_H, BAND_H, LANE_GAP, PAD, LEGEND_H = 720, 28, 30, 5, 10, 12, 16
SWATCH_W, CHAR_W, MAX_LABEL_CHARS = 18, 6.6, 32
_saved = itertools.count(1)


def timeline_text(data: dict) -> str:
    """Lanes and transfers in a stable order, plus the step time."""
    devices, ops, transfers = (len(data[k]) for k in ("devices", "ops", "transfers"))
    counts = clauses([trn("{n} device", "{n} devices", devices),
                        trn("{n} op", "{n} ops", ops),
                        trn("{n} transfer", "{n} transfers", transfers)])
    lines = [tr("Timeline: {counts}; step took {time}", counts=counts,
                time=format_us(data["step_us"]))]
    if data.get("modelled_on"):
        lines.insert(0, modelled_caption(data["modelled_on"]))
    short = {d["name"]: d["short"] for d in data["devices"]}
    for dev in data["devices"]:
        ops = sorted((o for o in data["ops"] if o["device"] == dev["name"]),
                     key=lambda o: o["name"])
        lines.append(f"  {dev['short']}: " + (clauses(f"{o['name']} ({o['op']})" for o in ops)
                                              or tr("idle")))
    for t in sorted(data["transfers"], key=lambda t: (t["tensor"], t["dst_device"])):
        lines.append("  " + tr("transfer {tensor}: {src} -> {dst} ({size})", tensor=t["tensor"],
                                  src=short.get(t["src_device"], t["src_device"]),
                                  dst=short.get(t["dst_device"], t["dst_device"]),
                                  size=format_bytes(t["bytes"])))
    return "\n".join(lines)


# ---- geometry shared with the extension ------------------------------------------------------
def transfer_arrows(data: dict) -> list[dict]:
    """The arrows of each transfer, in step time and device lanes (the extension's
    ``transferArrows`` draws the same). Per transfer: a ``send`` arrow from the end of the
    producer's bar (or the transfer's start when the producer did not run here) to the start
    of the transfer slice on the receiving lane, never before the data exists; a ``deliver``
    arrow from the slice's end into each consumer's bar. Each arrow is ``{"kind",
    "transfer", "x0_us", "src", "x1_us", "dst", "consumer"}`` (src/dst: device names)."""
    ops = {(o["device"], o["name"]): o for o in data["ops"]}
    arrows: list[dict] = []
    for i, t in enumerate(data["transfers"]):
        producer = ops.get((t["src_device"], t.get("src_op") or t["tensor"].split(":")[0]))
        ready = producer["end_us"] if producer else t["start_us"]
        arrive = max(t["end_us"], ready)
        arrows.append({"kind": "send", "transfer": i, "x0_us": ready, "src": t["src_device"],
                       "x1_us": min(max(t["start_us"], ready), arrive), "dst": t["dst_device"],
                       "consumer": None})
        for name in t.get("consumers", []):
            consumer = ops.get((t["dst_device"], name))
            if consumer is not None:
                enter = min(max(arrive, consumer["start_us"]), consumer["end_us"])
                arrows.append({"kind": "deliver", "transfer": i, "x0_us": arrive,
                               "src": t["dst_device"], "x1_us": enter, "dst": t["dst_device"],
                               "consumer": name})
    return arrows


def elide(label: str, max_chars: int) -> str:
    """``label`` cut to ``max_chars`` with an ellipsis in the middle (the device stays)."""
    if len(label) <= max_chars:
        return label
    keep = max_chars - 1
    return label[:keep // 2] + "…" + label[len(label) - (keep - keep // 2):]


# ---- SVG -------------------------------------------------------------------------------------
class _Geometry:
    """Maps step time and device lanes to pixels; lanes have a transfer band above the bars."""

    def __init__(self, data: dict) -> None:
        self.lanes = {d["name"]: i for i, d in enumerate(data["devices"])}
        longest = max((len(d["short"]) for d in data["devices"]), default=4)
        self.label_chars = min(longest, MAX_LABEL_CHARS)
        self.label_w = SWATCH_W + CHAR_W * self.label_chars + 14
        self.step = max(1, int(data["step_us"]))
        self.legend_y = AXIS_H + len(self.lanes) * (LANE_H + LANE_GAP) + 4
        self.height = self.legend_y + LEGEND_H + PAD
        self.width = self.label_w + PLOT_W + PAD

    def x(self, us: float) -> float:
        return self.label_w + PLOT_W * us / self.step

    def lane_top(self, device: str) -> float:
        return AXIS_H + self.lanes[device] * (LANE_H + LANE_GAP)

    def bar(self, device: str) -> tuple[float, float]:
        """Top and bottom of the op bars in a lane."""
        return self.lane_top(device) + BAND_H + 3, self.lane_top(device) + LANE_H - 2

    def band(self, device: str) -> float:
        """Middle of the lane's transfer band."""
        return self.lane_top(device) + 1 + BAND_H / 2


def _op_keys(data: dict, color_by: str) -> dict[str, tuple[str, str]]:
    """Legend key -> (fill, hatch): devices in their colours, op types as hatched greys."""
    if color_by == "device":
        return {d["short"]: (device_fill(d.get("color_index", i)), "solid")
                for i, d in enumerate(data["devices"])}
    return {op: op_style(i) for i, op in enumerate(sorted({o["op"] for o in data["ops"]}))}


def modelled_caption(profile: str) -> str:
    """What a modelled timeline says about itself."""
    return tr("Modelled time on {profile}: a model of that machine, not measured here.",
              profile=profile)


def _modelled_mark(data: dict) -> list[str]:
    """A modelled timeline's mark, top left: the word, and the whole caption as tooltip."""
    if not data.get("modelled_on"):
        return []
    return [f'<text x="4" y="{AXIS_H - 13}" font-weight="bold" fill="#a33333">'
            f'<title>{html_escape(modelled_caption(data["modelled_on"]))}</title>'
            f'{html_escape(tr("modelled"))}</text>']


def timeline_svg(data: dict, color_by: str = "type", show_transfers: bool = True) -> str:
    """The timeline as a standalone SVG document (text)."""
    g = _Geometry(data)
    short = {d["name"]: d["short"] for d in data["devices"]}
    keys = _op_keys(data, color_by)
    key = (lambda o: o["op"]) if color_by == "type" else (lambda o: short[o["device"]])
    body = _modelled_mark(data) + _axis(g) + _lanes(data, g) + \
        [_bar(o, g, *keys[key(o)]) for o in data["ops"]]
    if show_transfers:
        body += _transfers(data, g)
    body += _legend(keys, g, show_transfers and bool(data["transfers"]))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{g.width}" height="{g.height}" '
             f'viewBox="0 0 {g.width} {g.height}" font-family="Helvetica,Arial,sans-serif" '
             'font-size="11" role="img" aria-label="device timeline">',
             '<defs><marker id="tfteach-tl-arrow" markerWidth="8" markerHeight="8" refX="7" refY="4" '
             f'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="{TRANSFER_COLOR}"/></marker>'
             f'{_hatch_patterns()}</defs>',
             f'<rect width="{g.width}" height="{g.height}" fill="white"/>']
    parts += body
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _hatch_patterns() -> str:
    """One pattern per hatched op grey: ``tfteach-tl-<hatch>-<i>``."""
    out = []
    for i, fill in enumerate(OP_FILLS):
        ink = label_color(fill)
        out.append(f'<pattern id="tfteach-tl-stripes-{i}" width="6" height="6" '
                   'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
                   f'<rect width="6" height="6" fill="{fill}"/><line x1="0" y1="0" x2="0" '
                   f'y2="6" stroke="{ink}" stroke-width="1.5"/></pattern>')
        out.append(f'<pattern id="tfteach-tl-dots-{i}" width="5" height="5" '
                   f'patternUnits="userSpaceOnUse"><rect width="5" height="5" fill="{fill}"/>'
                   f'<circle cx="2.5" cy="2.5" r="1" fill="{ink}"/></pattern>')
    return "".join(out)


def _paint(fill: str, hatch: str) -> str:
    return fill if hatch == "solid" else f"url(#tfteach-tl-{hatch}-{OP_FILLS.index(fill)})"


def _axis(g: _Geometry) -> list[str]:
    out = [f'<line x1="{g.label_w}" y1="{AXIS_H - 6}" x2="{g.label_w + PLOT_W}" '
           f'y2="{AXIS_H - 6}" stroke="#888"/>']
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
    """Lane backgrounds, and labels (elided, full name in the tooltip) with the device's
    colour swatch, so devices keep their colour when bars show op types."""
    out = []
    for i, d in enumerate(data["devices"]):
        y = g.lane_top(d["name"])
        out.append(f'<rect x="{g.label_w}" y="{y}" width="{PLOT_W}" height="{LANE_H}" '
                   'fill="#F4F4F4"/>')
        out.append(f'<rect x="4" y="{y + LANE_H / 2 - 5}" width="10" height="10" '
                   f'fill="{device_fill(d.get("color_index", i))}" stroke="#333" '
                   'stroke-width="0.4"/>')
        out.append(f'<text x="{g.label_w - 6}" y="{y + LANE_H / 2 + 4}" text-anchor="end">'
                   f'<title>{html_escape(d["name"])}</title>'
                   f'{html_escape(elide(d["short"], g.label_chars))}</text>')
    return out


def _legend(keys: dict, g: _Geometry, transfers: bool) -> list[str]:
    """Rows of swatches (and the transfer arrow) under the lanes; grows ``g``."""
    out, x, y = [], float(g.label_w), g.legend_y
    items = list(keys.items()) + ([(tr("transfer"), None)] if transfers else [])
    for label, style in items:
        width = 30 + 6.5 * display_width(label)
        if x + width > g.label_w + PLOT_W and x > g.label_w:
            x, y = float(g.label_w), y + LEGEND_H
            g.height += LEGEND_H
        if style is None:
            out.append(f'<line x1="{x:.0f}" y1="{y + 6}" x2="{x + 14:.0f}" y2="{y + 6}" '
                       f'stroke="{TRANSFER_COLOR}" stroke-width="1.6" '
                       'marker-end="url(#tfteach-tl-arrow)"/>')
        else:
            out.append(f'<rect x="{x:.0f}" y="{y}" width="12" height="12" '
                       f'fill="{_paint(*style)}" stroke="#333" stroke-width="0.4"/>')
        out.append(f'<text x="{x + 17:.0f}" y="{y + 10}">{html_escape(label)}</text>')
        x += width
    return out


def _bar(op: dict, g: _Geometry, fill: str, hatch: str) -> str:
    x0, x1 = g.x(op["start_us"]), g.x(op["end_us"])
    top, bottom = g.bar(op["device"])
    tip = f'{op["name"]} ({op["op"]})\n' + tr(
        "{time} from {start}\noutput: {size}", time=format_us(op["end_us"] - op["start_us"]),
        start=format_us(op["start_us"]), size=format_bytes(op["bytes"]))
    return (f'<rect x="{x0:.1f}" y="{top}" width="{max(1.5, x1 - x0):.1f}" '
            f'height="{bottom - top}" fill="{_paint(fill, hatch)}" stroke="#333" '
            f'stroke-width="0.4"><title>{html_escape(tip)}</title></rect>')


def _transfers(data: dict, g: _Geometry) -> list[str]:
    """Each transfer's slice in the receiving lane's band, and its arrows."""
    out = []
    for t in data["transfers"]:
        if t["src_device"] in g.lanes and t["dst_device"] in g.lanes:
            x0, x1 = g.x(t["start_us"]), g.x(t["end_us"])
            tip = tr("transfer {tensor}: {size}, {time}", tensor=t["tensor"],
                     size=format_bytes(t["bytes"]), time=format_us(t["end_us"] - t["start_us"]))
            out.append(f'<rect x="{x0:.1f}" y="{g.lane_top(t["dst_device"]) + 1}" '
                       f'width="{max(1.5, x1 - x0):.1f}" height="{BAND_H}" '
                       f'fill="{TRANSFER_COLOR}"><title>{html_escape(tip)}</title></rect>')
    for a in transfer_arrows(data):
        if a["src"] in g.lanes and a["dst"] in g.lanes:
            out.append(_arrow(a, g))
    return out


def _arrow(a: dict, g: _Geometry) -> str:
    if a["kind"] == "send":
        top, bottom = g.bar(a["src"])
        y0, y1 = (top + bottom) / 2, g.band(a["dst"])
    else:
        y0, y1 = g.band(a["src"]), g.bar(a["dst"])[0]
    return (f'<line x1="{g.x(a["x0_us"]):.1f}" y1="{y0:.1f}" x2="{g.x(a["x1_us"]):.1f}" '
            f'y2="{y1:.1f}" stroke="{TRANSFER_COLOR}" stroke-width="1.4" '
            'marker-end="url(#tfteach-tl-arrow)"/>')


# ---- the view ----------------------------------------------------------------------------------
class TimelineView(View):
    """One step's device timeline: static SVG + JSON + text, live controls, trace export."""

    MIME = TIMELINE_MIME
    COLOR_CHOICES = ((N_("op type"), "type"), (N_("device"), "device"))

    def __init__(self, data: dict, chrome_trace: str | None = None) -> None:
        super().__init__()
        self.data = data
        self.chrome_trace = chrome_trace

    @classmethod
    def from_step_stats(cls, step_stats: Any, session_devices: list[str] | None = None,
                        modelled_on: str | None = None) -> "TimelineView":
        """The view of one step; with the session's device names, each lane keeps the colour
        its device has in the placement view (``color_index``: its place among them). A step
        modelled by ``tfteach.hardware`` names its profile in ``modelled_on``: the text, the
        picture and the payload then say it is modelled."""
        from tfteach.timeline import Timeline

        timeline = Timeline(step_stats)
        data = timeline.to_data()
        if modelled_on:
            data["modelled_on"] = modelled_on
        order = sorted(session_devices or [])
        for device in data["devices"]:
            if device["name"] in order:
                device["color_index"] = order.index(device["name"])
        return cls(data, timeline.generate_chrome_trace_format())

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
            raise ValueError(tr("This timeline has no Chrome trace (it was built from data "
                                "only)."))
        target = Path(path) if path is not None else Path(f"timeline-{next(_saved)}.json")
        target.write_text(self.chrome_trace)
        return target

    def extra_controls(self) -> list:
        import ipywidgets as w

        button = w.Button(description=tr("Save Chrome trace"), icon="download",
                          tooltip=tr("write the step's trace as JSON for Perfetto"),
                          layout=w.Layout(width="auto"))
        where = w.HTML()

        def save(_: Any) -> None:
            path = self.save_chrome_trace()
            link = (f'<a href="{html_escape(path.name)}" target="_blank">'
                    f'{html_escape(str(path))}</a>')
            where.value = tr("saved {link}: open it in ui.perfetto.dev", link=link)

        button.on_click(save)
        return [button, where]
