"""The extension's build step says what it is doing on the terminal, even while pip keeps
the build's stdout and stderr to itself (``labextension/build_progress.py``)."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from pathlib import Path

from labharness import REPO

# Stands in for npm: a real process that takes a little while (pip's npm would take minutes).
CHILD = """
import os, sys
sys.path.insert(0, {repo!r})
devnull = os.open(os.devnull, os.O_WRONLY)
os.dup2(devnull, 1)
os.dup2(devnull, 2)                      # as pip does: the build's own output is hidden
from labextension import build_progress
build_progress.HEARTBEAT_S = 0.3
build_progress.build("wheel", "standard", path={path!r},
                     npm=[sys.executable, "-c", "import time; time.sleep(0.5)"],
                     build_cmd="build:prod", **{extra})
"""


def _terminal_output(tmp_path: Path, **extra: str) -> str:
    code = CHILD.format(repo=str(REPO), path=str(tmp_path), extra=repr(extra))
    pid, fd = pty.fork()
    if pid == 0:                                            # the child: a session on the pty
        os.execv(sys.executable, [sys.executable, "-c", code])
    chunks, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            data = os.read(fd, 4096)
        except OSError:                                     # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, b"".join(chunks).decode()
    return b"".join(chunks).decode()


def test_the_npm_build_announces_itself_and_its_progress_on_the_terminal(tmp_path):
    shown = _terminal_output(tmp_path)
    assert "tfteach: building the JupyterLab extension with npm" in shown
    assert "tfteach: still building the JupyterLab extension" in shown
    assert "tfteach: JupyterLab extension built in" in shown


def test_an_up_to_date_editable_build_runs_no_npm_and_says_nothing(tmp_path):
    source, built = tmp_path / "src", tmp_path / "built"
    source.mkdir()
    (source / "index.ts").write_text("")
    time.sleep(0.05)
    built.mkdir()
    (built / "index.js").write_text("")
    shown = _terminal_output(tmp_path, source_dir=str(source), build_dir=str(built))
    assert "tfteach:" not in shown


def test_pyproject_builds_the_extension_through_it():
    text = (REPO / "pyproject.toml").read_text()
    assert 'build-function = "labextension.build_progress.build"' in text
    done = subprocess.run([sys.executable, "-c", "from labextension import build_progress"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
