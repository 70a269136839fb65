"""Lesson 11 passes nbval, leaves no task process behind, and its export shows each failure explained."""
from __future__ import annotations

import re

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, assert_stopped_every_task

LESSON = LESSONS / "11_when_things_go_wrong.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    assert_stopped_every_task(assert_passes_nbval(LESSON, tmp_path))


def test_export_shows_every_failure_with_its_hint(exported):
    for error, detail in [("UnavailableError", "no response from worker: /job:ps/replica:0/task:0"),
                          ("UnavailableError", "Task /job:worker/replica:0/task:1"),
                          ("AbortedError", "Graph handle is not found"),
                          ("FailedPreconditionError", "uninitialized value"),
                          ("PermissionDeniedError", "without a cluster token"),
                          ("UnauthenticatedError", "wrong cluster token for task "
                                                   "/job:worker/replica:0/task:1")]:
        assert re.search(rf"<b>{error}</b>.*?{re.escape(detail)}.*?<b>Hint:</b>", exported,
                         re.S), error
    assert "restoring model.ckpt-20" in exported and "step 20: w = 2.312" in exported
    assert re.search(r"25 ps restarted\s+21 22 .* 40\b", exported), "MonitoredTrainingSession"
    assert exported.count("Well done!") == 2
    assert "Stopped the cluster" in exported
    assert "TFTEACH_CLUSTER_TOKEN=" not in exported, "the token is never shown"
