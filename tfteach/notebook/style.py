"""Number formats and HTML helpers shared by the notebook views (colours: ``palette``). No state.
"""
from __future__ import annotations

import re

from wcwidth import wcswidth

from tfteach.i18n import duration_us, size

_BACKTICKS = re.compile(r"`([^`\n]+)`")


def format_us(us: float) -> str:
    """A duration in microseconds as ``850 µs``, ``1.25 ms`` or ``2.5 s``, in the learner's
    language (``1,25 мс``)."""
    return duration_us(us)


def text_table(rows: list[tuple[str, ...]]) -> str:
    """Rows of cells as plain-text columns, two spaces apart, aligned by display width (a
    Korean or Chinese character takes two columns)."""
    widths = [max(display_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell + " " * (w - display_width(cell)) for cell, w in
                               zip(row, widths, strict=True)).rstrip() for row in rows)


def display_width(text: str) -> int:
    """How many columns ``text`` takes in a monospace font (wide characters take two)."""
    return max(wcswidth(text), len(text))


def format_bytes(n: int | None) -> str:
    """``None`` as ``?``; else ``512 B``, ``4.0 KiB``, ``1.5 MiB``, ``2.0 GiB``, in the
    learner's language (``1,5 МиБ``)."""
    return size(n)


def html_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def inline_code(text: str) -> str:
    """``text`` as HTML, with each span between backticks shown as ``<code>``."""
    return _BACKTICKS.sub(r"<code>\1</code>", html_escape(text))


def kernel_running() -> bool:
    """Whether this code runs inside a Jupyter kernel (where widgets can be shown)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
