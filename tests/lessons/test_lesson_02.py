"""Lesson 2 (placing by hand and by function) passes nbval, and its HTML export shows the
nested-scope placement, the device function's CPU variables and the int32 kernel error."""
from __future__ import annotations

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, svgs

LESSON = LESSONS / "02_placing_by_hand.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(tmp_path):
    assert_passes_nbval(LESSON, tmp_path)


def test_export_draws_each_placement(exported):
    graphs = [s for s in svgs(exported) if "cluster_dev_" in s]
    assert len(graphs) >= 7
    assert any(">w/read</text>" in s and ">CPU:0</text>" in s and ">GPU:1</text>" in s
               for s in graphs), "the device function's drawing has w on the CPU, y on GPU:1"


def test_export_explains_the_int32_error_and_checks_the_exercises(exported):
    assert "InvalidArgumentError" in exported
    assert "no supported kernel for GPU devices" in exported
    assert "Hint:" in exported
    assert "Correct: the placement. Well done!" in exported
    assert "Correct: the requests of p, q and r. Well done!" in exported
    assert "On real TensorFlow" in exported
