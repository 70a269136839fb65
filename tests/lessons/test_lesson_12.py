"""Lesson 12 (capstone) passes nbval, leaves no process behind, and its export shows the run."""
from __future__ import annotations

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, assert_stopped_every_task

LESSON = LESSONS / "12_capstone.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    assert_stopped_every_task(assert_passes_nbval(LESSON, tmp_path))


def test_export_shows_the_run_and_the_result(exported):
    assert 'src="data:image/png;base64,' in exported, "the live loss curves"
    assert "exit codes: [0, 0]" in exported
    assert "test accuracy &gt;= 0.9: True" in exported
    assert "a program learns who it is from --job_name and --task_index" in exported, \
        "a first try's direction"
    assert "Correct: the job name, task index and worker hosts. Well done!" in exported
    assert "Stopped the programs and the cluster" in exported
