"""The build step of tfteach's JupyterLab extension, with progress a person can see.

pyproject's jupyter-builder hook calls ``build``: it runs hatch-jupyter-builder's
``npm_builder`` (``npm install``, then ``npm run build:prod``) and says what it is doing.
pip keeps a build's output to itself unless it runs with ``-v``, so during a first
``pip install`` from a source checkout the npm build (a minute or two) would look like a hang
behind "Preparing editable metadata". The progress lines therefore go to the terminal pip
runs in (``/dev/tty``) when there is one, as well as to stderr (for ``pip -v`` and logs):
a start line, a line every ``HEARTBEAT_S`` seconds while npm runs, and the time it took.

It runs in pip's isolated build environment, where only the build requirements are
installed: it imports nothing of tfteach.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Callable, TextIO

from hatch_jupyter_builder import npm_builder
from hatch_jupyter_builder.utils import is_stale

HEARTBEAT_S = 15.0


def build(target_name: str, version: str, **kwargs: Any) -> None:
    """hatch-jupyter-builder's npm build, announced on the terminal when it will run."""
    if not _will_build(version, **kwargs):
        npm_builder(target_name, version, **kwargs)
        return
    say = _announcer()
    say("tfteach: building the JupyterLab extension with npm (a minute or two, once)...")
    started = time.monotonic()
    done = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(say, started, done), daemon=True)
    beat.start()
    try:
        npm_builder(target_name, version, **kwargs)
    except BaseException:
        say(f"tfteach: the extension's npm build failed after {_since(started)}; "
            "pip prints npm's output below")
        raise
    finally:
        done.set()
        beat.join()
    say(f"tfteach: JupyterLab extension built in {_since(started)}")


def _will_build(version: str, build_dir: str | None = None, source_dir: str | None = None,
                force: bool = False, **_: Any) -> bool:
    """Whether ``npm_builder`` will run npm (not skipped, not an up-to-date editable build)."""
    if "--skip-npm" in sys.argv or os.environ.get("HATCH_JUPYTER_BUILDER_SKIP_NPM") == "1":
        return False
    return force or not (build_dir and source_dir) or is_stale(build_dir, source_dir)


def _heartbeat(say: Callable[[str], None], started: float, done: threading.Event) -> None:
    while not done.wait(HEARTBEAT_S):
        say(f"tfteach: still building the JupyterLab extension ({_since(started)} so far)")


def _since(started: float) -> str:
    return f"{time.monotonic() - started:.0f} s"


def _announcer() -> Callable[[str], None]:
    """A function that writes one line to stderr and to the terminal, if there is one."""
    streams: list[TextIO] = [sys.stderr]
    if not sys.stderr.isatty():             # under pip, stderr is a pipe it keeps
        try:
            streams.append(open("/dev/tty", "w", encoding="utf-8"))  # noqa: SIM115
        except OSError:
            pass                            # no terminal: CI, a notebook, a service

    def say(line: str) -> None:
        for stream in streams:
            try:
                stream.write(line + "\n")
                stream.flush()
            except OSError:
                pass
    return say
