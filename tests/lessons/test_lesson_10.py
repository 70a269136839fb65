"""Lesson 10 passes nbval, leaves no task process behind, and its export shows sync vs async."""
from __future__ import annotations

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, assert_stopped_every_task

LESSON = LESSONS / "10_sync_vs_async.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    assert_stopped_every_task(assert_passes_nbval(LESSON, tmp_path))


def test_export_shows_curves_counts_and_feedback(exported):
    assert exported.count('src="data:image/png;base64,') >= 3, "the loss curves"
    assert "sync gradients accepted: at least 100 steps x 2 workers: True" in exported
    assert "sync: accuracy &gt;= 0.85: True" in exported
    assert "sync with a backup worker still learns (accuracy &gt;= 0.85): True" in exported
    assert "average of replicas_to_aggregate gradients" in exported, "a first try's direction"
    assert "Correct: the sync worker graphs" in exported, "the solution of exercise 3"
    assert "global step 20 after" in exported, "the learner's graphs trained"
    assert "Stopped the cluster" in exported
