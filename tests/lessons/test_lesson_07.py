"""Lesson 7 passes nbval, leaves no task process behind, and its HTML export shows the cluster."""
from __future__ import annotations

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, assert_stopped_every_task, svgs

LESSON = LESSONS / "07_local_cluster.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    assert_stopped_every_task(assert_passes_nbval(LESSON, tmp_path))


def test_export_shows_hello_and_placements_boxed_by_task(exported):
    assert "Hello, distributed TensorFlow!" in exported
    graphs = [s for s in svgs(exported) if "/job:worker/task:1" in s]
    assert len(graphs) >= 4, "the placement pictures of the cluster runs"
    assert any("/job:host/task:0" in s for s in graphs), "the CLI workers + host run"
    assert "worker 0 exited with code 0" in exported and "worker 1 exited with code 0" in exported
    assert "Correct: the placement. Well done!" in exported
    assert "Stopped the cluster" in exported
