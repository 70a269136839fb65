"""Loss curves of sync and async training: loss against step and wall time, plus staleness.

Input: the histories that the distributed-training experiments produce::

    {"sync":  [{"worker", "step", "global_step", "wall_time", "loss", "accepted"}, ...],
     "async": [{"worker", "step", "global_step", "wall_time", "loss", "staleness"}, ...]}

(any mode name works; records may lack ``staleness``/``accepted``).

``plot_histories(histories)`` draws a matplotlib ``Figure`` with three panels: loss vs global
step, loss vs seconds since that mode's first record, and the second panel of interest:
staleness of async updates per worker, with sync gradients that were dropped as stale marked
on it. ``LossCurves`` keeps histories, displays the figure as a PNG under a display id and
redraws it in place (at most every ``min_interval_s``) as records arrive, so a running
experiment updates live and the notebook keeps the final picture.

Why matplotlib: it is the best-kept plotting library in the scientific Python stack; its Agg
backend renders PNGs in-process with no display server, no browser-side JavaScript and no
network (plotly/bokeh need their JS bundles to show or export a figure), so the same picture
updates live in JupyterLab 4, Notebook 7 and VS Code and survives nbconvert and GitHub.
We use ``matplotlib.figure.Figure`` directly, never pyplot, so no global figure state leaks
and the inline backend does not show figures twice. Every series of a figure has its own
colour: sync and async keep theirs, other modes take the next free one, and in the
staleness panel worker 0 of a mode has the mode's colour, its other workers free ones (with
their own markers too), and a mode's dropped gradients are crosses in its colour. The
background is transparent and text and axes are a grey that reads on light and dark themes.
"""
from __future__ import annotations

import base64
import io
import time
from typing import Any, Callable, Iterable

from tfteach.i18n import clauses, significant, tr, trn
from tfteach.notebook.style import display_width
from tfteach.notebook.palette import figure_rc

MODE_COLORS = {"sync": "#0072B2", "async": "#D55E00"}
OTHER_COLORS = ("#009E73", "#CC79A7", "#E69F00", "#56B4E9")
WORKER_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
TITLE_COLUMNS = 40      # what one of the three panels' titles holds at fontsize 10


def series_colors(histories: dict[str, list[dict]]) -> dict[tuple[str, int | None], str]:
    """A distinct colour per series: ``(mode, None)`` for a mode's loss curves and dropped
    gradients, ``(mode, worker)`` for its workers' staleness (worker 0 shares the mode's)."""
    free = [c for c in (*OTHER_COLORS, *MODE_COLORS.values())
            if c not in {MODE_COLORS[m] for m in histories if m in MODE_COLORS}]
    colors: dict[tuple[str, int | None], str] = {}
    for mode in histories:
        colors[(mode, None)] = MODE_COLORS.get(mode) or _take(free, len(colors))
    for mode, records in histories.items():
        for j, worker in enumerate(_stale_workers(records)):
            colors[(mode, worker)] = colors[(mode, None)] if j == 0 else _take(free, len(colors))
    return colors


def _take(free: list[str], n: int) -> str:
    """The next unused colour (after all are used, they repeat: markers still differ)."""
    return free.pop(0) if free else OTHER_COLORS[n % len(OTHER_COLORS)]


def _stale_workers(records: list[dict]) -> list[int]:
    return sorted({r.get("worker", 0) for r in records
                   if r.get("staleness") is not None and r.get("global_step") is not None})


def _sorted(records: Iterable[dict], key: str) -> list[dict]:
    return sorted((r for r in records if r.get(key) is not None and r.get("loss") is not None),
                  key=lambda r: (r[key], r.get("worker", 0)))


def plot_histories(histories: dict[str, list[dict]], title: str = "") -> Any:
    """A matplotlib Figure: loss/step, loss/wall time, staleness; transparent, with text and
    axes that read on a light and a dark notebook (``palette.figure_rc``)."""
    import matplotlib

    with matplotlib.rc_context(figure_rc()):
        return _plot(histories, title)


def _plot(histories: dict[str, list[dict]], title: str) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.4), dpi=90, layout="constrained")
    by_step, by_time, stale = fig.subplots(1, 3)
    colors = series_colors(histories)
    for mode, records in histories.items():
        color = colors[(mode, None)]
        steps = _sorted(records, "global_step")
        by_step.plot([r["global_step"] for r in steps], [r["loss"] for r in steps],
                     color=color, lw=1.2, marker=".", ms=3, label=mode)
        timed = _sorted(records, "wall_time")
        t0 = timed[0]["wall_time"] if timed else 0.0
        by_time.plot([r["wall_time"] - t0 for r in timed], [r["loss"] for r in timed],
                     color=color, lw=1.2, marker=".", ms=3, label=mode)
        _plot_staleness(stale, mode, records, colors)
    _label(by_step, tr("loss against global step"), tr("global step"), tr("loss"))
    _label(by_time, tr("loss against wall time"), tr("seconds since start"), tr("loss"))
    _label(stale, tr("staleness of applied updates"), tr("global step"), tr("steps behind"))
    if title:
        fig.suptitle(title)
    return fig


def _plot_staleness(ax: Any, mode: str, records: list[dict], colors: dict) -> None:
    for j, worker in enumerate(_stale_workers(records)):
        mine = [r for r in records if r.get("worker", 0) == worker
                and r.get("staleness") is not None and r.get("global_step") is not None]
        ax.scatter([r["global_step"] for r in mine], [r["staleness"] for r in mine],
                   s=14, color=colors[(mode, worker)],
                   marker=WORKER_MARKERS[j % len(WORKER_MARKERS)],
                   label=tr("{mode} worker {worker}", mode=mode, worker=worker), alpha=0.8)
    dropped = [r for r in records if r.get("accepted") is False and r.get("global_step") is not None]
    if dropped:
        ax.scatter([r["global_step"] for r in dropped], [0] * len(dropped), s=30, marker="x",
                   color=colors[(mode, None)],
                   label=tr("{mode}: stale gradient dropped", mode=mode))


def _label(ax: Any, title: str, xlabel: str, ylabel: str) -> None:
    ax.set_title(wrap_title(title), fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def wrap_title(title: str, width: int = TITLE_COLUMNS) -> str:
    """``title`` on as many lines as it takes to fit a panel ``width`` columns wide (a
    Korean or Chinese character takes two), so a long translation is never clipped."""
    lines: list[str] = []
    for word in title.split(" ") if " " in title else list(title):
        sep = " " if " " in title and lines else ""
        if lines and display_width(lines[-1] + sep + word) <= width:
            lines[-1] += sep + word
        else:
            lines.append(word)
    return "\n".join(lines)


def figure_png(fig: Any) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    buffer = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buffer)
    return buffer.getvalue()


def summary(histories: dict[str, list[dict]]) -> str:
    """One deterministic line per mode: records, workers, last loss."""
    lines = [tr("Loss curves:")]
    for mode, records in histories.items():
        steps = _sorted(records, "global_step")
        workers = len({r.get("worker", 0) for r in records})
        parts = [trn("{records} records from {n} worker", "{records} records from {n} workers",
                     workers, records=len(records))]
        if steps:
            parts.append(tr("last loss {loss} at global step {step}",
                            loss=significant(steps[-1]["loss"], 4), step=steps[-1]["global_step"]))
        stale = [r["staleness"] for r in records if r.get("staleness") is not None]
        if stale:
            parts.append(tr("max staleness {steps}", steps=max(stale)))
        dropped = sum(1 for r in records if r.get("accepted") is False)
        if dropped:
            parts.append(trn("{n} stale gradient dropped", "{n} stale gradients dropped",
                             dropped))
        lines.append(f"  {mode}: " + clauses(parts))
    return "\n".join(lines)


class LossCurves:
    """Live loss curves: ``show()``, then ``add``/``extend``/``update`` as records arrive."""

    def __init__(self, histories: dict[str, list[dict]] | None = None, title: str = "",
                 min_interval_s: float = 0.5, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.histories: dict[str, list[dict]] = {k: list(v) for k, v in (histories or {}).items()}
        self.title = title
        self.min_interval_s = min_interval_s
        self.clock = clock
        self._handle: Any = None
        self._last_draw = float("-inf")

    def add(self, mode: str, record: dict) -> None:
        self.histories.setdefault(mode, []).append(dict(record))
        self.refresh()

    def extend(self, mode: str, records: Iterable[dict]) -> None:
        self.histories.setdefault(mode, []).extend(dict(r) for r in records)
        self.refresh()

    def update(self, histories: dict[str, list[dict]]) -> None:
        """Replace all histories (e.g. with an experiment's latest) and redraw."""
        self.histories = {k: list(v) for k, v in histories.items()}
        self.refresh(force=True)

    def figure(self) -> Any:
        return plot_histories(self.histories, self.title)

    def png(self) -> bytes:
        return figure_png(self.figure())

    def text(self) -> str:
        return summary(self.histories)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"image/png": base64.b64encode(self.png()).decode("ascii"),
                "text/plain": self.text()}

    def show(self) -> "LossCurves":
        from IPython.display import display

        self._handle = display(self, display_id=True)
        self._last_draw = self.clock()
        return self

    def refresh(self, force: bool = False) -> None:
        """Redraw a shown figure in place, at most every ``min_interval_s`` unless forced."""
        if self._handle is None:
            return
        if force or self.clock() - self._last_draw >= self.min_interval_s:
            self._last_draw = self.clock()
            self._handle.update(self)

    def close(self) -> None:
        """Final redraw (call when the experiment ends)."""
        self.refresh(force=True)
