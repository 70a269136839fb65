"""Lesson 8 passes nbval, leaves no task process behind, and its export shows the ps placement."""
from __future__ import annotations

import re

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, assert_stopped_every_task, svgs

LESSON = LESSONS / "08_parameter_servers.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    assert_stopped_every_task(assert_passes_nbval(LESSON, tmp_path))


def test_export_shows_variables_on_ps_tasks_and_the_wire_tables(exported):
    graphs = [s for s in svgs(exported) if "/job:ps/task:1" in s and "/job:worker/task:0" in s]
    assert graphs, "the placement picture boxes the ps tasks and the worker"
    assert any(">w1</text>" in s and ">b2</text>" in s for s in graphs)
    assert 'src="data:image/png;base64,' in exported, "the bytes-per-ps bar chart"
    assert re.search(r"round robin\s+9472\s+168", exported)
    assert re.search(r"greedy by bytes\s+8192\s+1448", exported)
    assert re.search(r"total\s+14\s+19304", exported), "bytes on the wire per step"
    assert "Correct: the bytes per ps task. Well done!" in exported
    assert "Stopped the cluster" in exported
