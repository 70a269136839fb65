"""Progress for long runs: steps done, rate, ETA, latest metrics; stoppable with the stop button.

    with Progress(total=200, label="async training") as progress:
        for step in range(200):
            loss = sess.run(train_op)
            progress.update(step + 1, loss=loss)

The bar is one output updated in place (a display handle, at most every ``min_interval_s``
seconds, and once at the end), so the saved notebook keeps the final state. Pressing the
notebook's stop button raises ``KeyboardInterrupt`` inside the ``with`` block; ``Progress``
then records where the run stopped, shows it, and (with ``swallow_interrupt=True``, the
default) lets the cell end normally: nothing is torn down, so sessions, variables and
clusters stay as the last finished step left them. State: ``done``, ``total``, ``metrics``,
``interrupted``, start time. The clock is injectable so ETA logic is testable without time.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from tfteach.i18n import N_, clauses, percent, significant, tr
from tfteach.notebook.style import html_escape


def format_seconds(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min`` in the learner's language."""
    if seconds < 60:
        return tr("{value} s", value=f"{seconds:.0f}")
    if seconds < 3600:
        return tr("{min} min {s} s", min=f"{seconds // 60:.0f}", s=f"{seconds % 60:.0f}")
    return tr("{h} h {min} min", h=f"{seconds // 3600:.0f}", min=f"{seconds % 3600 // 60:.0f}")


STEPS = N_("steps")      # the default label, shown through the catalog


class Progress:
    """A progress line for ``total`` steps (``total=None``: unknown length)."""

    def __init__(self, total: int | None = None, label: str = STEPS,
                 min_interval_s: float = 0.2, swallow_interrupt: bool = True,
                 clock: Callable[[], float] = time.monotonic, display: bool = True) -> None:
        self.total = total
        self.label = label
        self.min_interval_s = min_interval_s
        self.swallow_interrupt = swallow_interrupt
        self.clock = clock
        self.done = 0
        self.metrics: dict[str, Any] = {}
        self.interrupted = False
        self.finished = False
        self._display = display
        self._start = clock()
        self._last_draw = float("-inf")
        self._handle: Any = None

    # -- numbers ------------------------------------------------------------------------
    def elapsed(self) -> float:
        return max(0.0, self.clock() - self._start)

    def rate(self) -> float | None:
        """Steps per second so far (None before the first step)."""
        elapsed = self.elapsed()
        return self.done / elapsed if self.done and elapsed > 0 else None

    def eta(self) -> float | None:
        """Seconds left at the current rate (None if unknown)."""
        rate = self.rate()
        if self.total is None or rate is None:
            return None
        return max(0, self.total - self.done) / rate

    def text(self) -> str:
        count = f"{self.done}/{self.total}" if self.total else str(self.done)
        parts = [tr("{label}: {count}", label=tr(self.label), count=count)]  # i18n: dynamic
        if self.total:
            parts[0] += f" ({percent(100 * self.done // self.total / 100)})"
        rate, eta = self.rate(), self.eta()
        if rate is not None:
            parts.append(tr("{rate} steps/s", rate=significant(rate, 3)))
        if eta is not None and not self.finished:
            parts.append(tr("ETA {time}", time=format_seconds(eta)))
        parts += [f"{k} {_short(v)}" for k, v in self.metrics.items()]
        line = clauses(parts)
        if self.interrupted:
            line += "\n" + tr("Stopped by you after step {step}: everything up to that step is "
                              "kept (sessions, variables and clusters are still usable).",
                              step=self.done)
        return line

    def html(self) -> str:
        fraction = self.done / self.total if self.total else 0.0
        color = "#E67E22" if self.interrupted else "#2E86C1"
        bar = (f"<div style='width:320px;height:10px;background:var(--jp-layout-color3,#EEE);"
               "border-radius:5px'>"
               f"<div style='width:{min(1.0, fraction) * 100:.1f}%;height:10px;"
               f"background:{color};border-radius:5px'></div></div>") if self.total else ""
        text = html_escape(self.text()).replace("\n", "<br>")
        return f"<div class='tfteach-progress'>{bar}<div style='font-size:12px'>{text}</div></div>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text()}

    # -- updates ------------------------------------------------------------------------
    def update(self, done: int | None = None, **metrics: Any) -> None:
        """Set the steps done (default: one more) and the latest metrics; redraw if due."""
        self.done = self.done + 1 if done is None else int(done)
        self.metrics.update(metrics)
        if self.clock() - self._last_draw >= self.min_interval_s:
            self.draw()

    def draw(self) -> None:
        self._last_draw = self.clock()
        if not self._display:
            return
        from IPython.display import display

        if self._handle is None:
            self._handle = display(self, display_id=True)
        else:
            self._handle.update(self)

    def close(self) -> None:
        self.finished = True
        self.draw()

    def __enter__(self) -> "Progress":
        self._start = self.clock()
        self.draw()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self.interrupted = True
        self.close()
        return bool(self.interrupted and self.swallow_interrupt)


def _short(value: Any) -> str:
    try:
        return significant(float(value), 4)
    except (TypeError, ValueError):
        return str(value)
