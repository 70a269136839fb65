"""The one palette of every tfteach picture: Python's static views and the JupyterLab extension.

- ``DEVICE_FILLS``: categorical colours for devices (and jobs), handed out in order, so a
  device keeps its colour in the placement graph, the timeline and the legend;
- ``OP_FILLS`` x ``OP_HATCHES``: op types get a separate encoding, a neutral grey with a
  hatch (solid, stripes, dots), so an op type never looks like a device;
- ``TRANSFER_COLOR`` for transfers, ``FEEDBACK`` accents for the error / success / note boxes;
- ``figure_rc()``: matplotlib settings for figures that read on light and dark themes
  (transparent background, ``FIGURE_INK`` text and axes); ``theme_matplotlib()`` makes them
  the kernel's defaults (``%load_ext tfteach`` calls it);
- ``label_color(fill)``: the text colour (near-black or white) with the higher WCAG contrast
  on ``fill``; every fill here reaches at least ``MIN_CONTRAST`` with its label colour.

The extension reads the same data from ``labextension/src/palette.ts``, which is generated
from this module (``python -m tfteach.notebook.palette > labextension/src/palette.ts``; a test
checks that the two agree). No state.
"""
from __future__ import annotations

from typing import Any

DEVICE_FILLS = ("#56B4E9", "#E69F00", "#009E73", "#CC79A7", "#0072B2", "#D55E00", "#F0E442",
                "#999999", "#8DD3C7", "#BEBADA", "#FB8072", "#80B1D3", "#FDB462", "#B3DE69")
OP_FILLS = ("#E0E0E0", "#B0B0B0", "#808080", "#585858")
OP_HATCHES = ("solid", "stripes", "dots")
TRANSFER_COLOR = "#D0402F"
DARK_TEXT, LIGHT_TEXT = "#111111", "#FFFFFF"
# text, axes and grid of matplotlib figures, drawn on a transparent background: the grey
# that reads on a white page (contrast 4.5) and on JupyterLab's dark one (#111111: 4.2)
FIGURE_INK = "#767676"
MIN_CONTRAST = 4.5
# accent colour of each feedback box; its background is the accent at low opacity over the
# page, so the box reads on a light and a dark theme with the theme's own text colour.
FEEDBACK = {"error": "#C0392B", "success": "#1E8449", "note": "#2E86C1", "warning": "#D68910"}


def relative_luminance(color: str) -> float:
    """WCAG 2 relative luminance of a ``#rrggbb`` colour."""
    channels = [int(color.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21)."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def label_color(fill: str) -> str:
    """The text colour for a label on ``fill``: near-black or white, whichever contrasts more."""
    return max((DARK_TEXT, LIGHT_TEXT), key=lambda text: contrast(fill, text))


def device_fill(index: int) -> str:
    """The colour of the ``index``-th device (the palette repeats when exhausted)."""
    return DEVICE_FILLS[index % len(DEVICE_FILLS)]


def op_style(index: int) -> tuple[str, str]:
    """(fill, hatch) of the ``index``-th op type: greys first, then the same greys hatched."""
    return OP_FILLS[index % len(OP_FILLS)], OP_HATCHES[(index // len(OP_FILLS)) % len(OP_HATCHES)]


def colors_for(keys: object) -> dict[str, str]:
    """A device colour per distinct key, in sorted order (stable across runs)."""
    return {k: device_fill(i) for i, k in enumerate(sorted(set(keys)))}  # type: ignore[call-overload]


def feedback_style(kind: str) -> str:
    """Inline CSS of a feedback box (``error``, ``success``, ``note``, ``warning``): an accent
    bar, the accent as a translucent tint and JupyterLab's text colour, so it follows the
    theme; outside JupyterLab (nbconvert, GitHub) the page's own text colour is used."""
    accent = FEEDBACK[kind]
    tint = accent + "24"   # about 14 % opacity over the page
    return (f"border-left:4px solid {accent};background:{tint};"
            "color:var(--jp-content-font-color1,inherit);padding:6px 10px;margin:4px 0")


def figure_rc() -> dict[str, Any]:
    """matplotlib rcParams (use with ``matplotlib.rc_context``) for a transparent figure
    whose text, ticks, spines and grid read on a light and on a dark notebook, in any
    lesson language (``fonts.font_rc``)."""
    from tfteach.notebook.fonts import font_rc

    ink = FIGURE_INK
    return {**font_rc(), "figure.facecolor": "none", "axes.facecolor": "none", "savefig.transparent": "True",
            "text.color": ink, "axes.labelcolor": ink, "axes.edgecolor": ink,
            "axes.titlecolor": ink, "xtick.color": ink, "ytick.color": ink,
            "grid.color": ink, "legend.facecolor": "none", "legend.edgecolor": ink,
            "legend.labelcolor": ink}


def theme_matplotlib() -> bool:
    """Make matplotlib's defaults ``figure_rc()`` in this process (``%load_ext tfteach`` does,
    so a lesson's own figures read in a dark JupyterLab too); False without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.rcParams.update(figure_rc())
    return True


def palette_data() -> dict:
    """Everything the extension needs, with each fill's label colour computed here."""
    return {"deviceFills": list(DEVICE_FILLS),
            "deviceLabels": [label_color(c) for c in DEVICE_FILLS],
            "opFills": list(OP_FILLS), "opLabels": [label_color(c) for c in OP_FILLS],
            "opHatches": list(OP_HATCHES), "transfer": TRANSFER_COLOR,
            "feedback": dict(FEEDBACK)}


def ts_source() -> str:
    """The text of ``labextension/src/palette.ts`` (formatted as prettier would)."""
    lines = [f"  {key}: {_ts_value(value)}," for key, value in palette_data().items()]
    lines[-1] = lines[-1].rstrip(",")
    return ("/**\n * The tfteach palette, shared with the Python views. Generated from\n"
            " * tfteach/notebook/palette.py: do not edit; run\n"
            " * python -m tfteach.notebook.palette > labextension/src/palette.ts\n */\n"
            "export const PALETTE_DATA = {\n" + "\n".join(lines) + "\n};\n")


def _ts_value(value: object) -> str:
    """A list or dict of strings as a TypeScript literal: inline when short, else one item
    a line."""
    if isinstance(value, str):
        return f"'{value}'"
    items = ([f"{k}: '{v}'" for k, v in value.items()] if isinstance(value, dict)
             else [f"'{v}'" for v in value])  # type: ignore[union-attr]
    open_, close = ("{ ", " }") if isinstance(value, dict) else ("[", "]")
    inline = open_ + ", ".join(items) + close
    if len(inline) < 80:
        return inline
    return open_.strip() + "\n" + ",\n".join(f"    {i}" for i in items) + "\n  " + close.strip()


if __name__ == "__main__":
    print(ts_source(), end="")
