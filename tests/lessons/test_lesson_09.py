"""Lesson 9 passes nbval, leaves no task process behind, and its export compares both replications."""
from __future__ import annotations

import re

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, assert_stopped_every_task, svgs

LESSON = LESSONS / "09_in_graph_vs_between_graph.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    assert_stopped_every_task(assert_passes_nbval(LESSON, tmp_path))


def test_export_shows_towers_on_two_workers_and_the_comparison(exported):
    graphs = [s for s in svgs(exported) if "/job:worker/task:1" in s and "/job:ps/task:0" in s]
    assert any(">tower_1/MatMul</text>" in s for s in graphs), "the in-graph placement"
    assert "in-graph: 60 session.run calls, final global step 60" in exported
    assert "final global step: 120" in exported, "two async workers, 60 steps each"
    assert 'src="data:image/png;base64,' in exported, "the loss curves"
    assert re.search(r"graphs / sessions\s+1 / 1\s+2 / 2", exported)
    assert "Correct: the devices (variable job, matmul). Well done!" in exported
    assert "Stopped the cluster" in exported
