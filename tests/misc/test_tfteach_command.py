"""The ``tfteach`` command: lessons copy (fresh notebooks without outputs), devices."""
import json
import subprocess
import sys

import pytest

from tfteach import cli


def _lesson(outputs):
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Hi"},
        {"cell_type": "code", "metadata": {}, "source": "1+1", "execution_count": 3,
         "outputs": outputs}]}


def test_strip_outputs_clears_code_cells_only():
    nb = cli.strip_outputs(_lesson([{"output_type": "stream", "name": "stdout", "text": "2"}]))
    code = nb["cells"][1]
    assert code["outputs"] == [] and code["execution_count"] is None
    assert nb["cells"][0]["source"] == "# Hi"


def test_copy_lessons_writes_fresh_notebooks(tmp_path, monkeypatch):
    src = tmp_path / "lessons"
    src.mkdir()
    (src / "01_x.ipynb").write_text(json.dumps(_lesson([{"output_type": "stream",
                                                         "name": "stdout", "text": "2"}])))
    (src / "README.md").write_text("syllabus")
    monkeypatch.setattr(cli, "lessons_dir", lambda: src)
    out = tmp_path / "class"
    written = cli.copy_lessons(out)
    assert sorted(p.name for p in written) == ["01_x.ipynb", "README.md"]
    assert json.loads((out / "01_x.ipynb").read_text())["cells"][1]["outputs"] == []
    with pytest.raises(FileExistsError, match="--overwrite"):
        cli.copy_lessons(out)
    assert cli.copy_lessons(out, overwrite=True)


def test_command_line_lists_devices():
    out = subprocess.run([sys.executable, "-m", "tfteach.cli", "devices"], capture_output=True,
                         text=True, check=True).stdout
    assert "/job:localhost/replica:0/task:0/device:CPU:0" in out
