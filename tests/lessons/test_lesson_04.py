"""Lesson 4 (how a graph runs) passes nbval, and its HTML export shows the ready-queue
walk-through, timelines with overlapping GPUs and the cost of copies."""
from __future__ import annotations

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, svgs

LESSON = LESSONS / "04_how_a_graph_runs.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(tmp_path):
    assert_passes_nbval(LESSON, tmp_path)


def test_export_walks_through_the_pending_counts(exported):
    assert "pending counts: {'x': 0, 'w': 0, 'b': 0, 'xw': 2, 'sq': 1, 'y': 2, 'out': 2}" in exported
    assert "7. run out" in exported
    assert "Correct: the pending counts. Well done!" in exported


def test_export_draws_timelines_and_copy_costs(exported):
    timelines = [s for s in svgs(exported) if "tfteach-tl-arrow" in s]
    assert len(timelines) >= 6
    assert any(">GPU:0</text>" in s and ">GPU:1</text>" in s and ">MatMul</text>" in s
               for s in timelines), "the two GPUs' products on one timeline"
    assert "67108864" in exported                              # the 64 MiB copy's bytes
    assert "Correct: the number of transfers. Well done!" in exported
    assert "On real TensorFlow" in exported
