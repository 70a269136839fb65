"""Lesson 5 (data parallelism) passes nbval, and its HTML export shows the towers' shared
variables, a traced step, the scaling table and the slow GPU's idle time."""
from __future__ import annotations

import re

import pytest
from lesson_tools import LESSONS, assert_passes_nbval

LESSON = LESSONS / "05_data_parallelism.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(tmp_path):
    assert_passes_nbval(LESSON, tmp_path)


def test_export_shows_towers_sharing_one_set_of_variables(exported):
    assert "model/hidden1/weights:0" in exported and "asks for /device:CPU:0" in exported
    assert "GPU:0: 46 ops   tower_0/ (46)" in exported
    assert "GPU:1: 46 ops   tower_1/ (46)" in exported
    assert "test accuracy 0.9" in exported                     # the two towers learned


def test_export_shows_scaling_and_the_slow_gpu(exported):
    assert re.search(r"<td>4</td>\s*<td>1024</td>\s*<td>[\d.]+ steps/s</td>\s*"
                     r"<td>\d+ examples/s</td>\s*<td>[\d.]+x</td>", exported)
    assert "0.3x" in exported                                  # the slow GPU in the table
    assert re.search(r"<td>GPU:0</td>(\s*<td>[\d.]+ (µs|ms|s)</td>){3}", exported)
    assert exported.count('src="data:image/png;base64,') >= 3   # digits, loss, bar chart
    assert "Correct: the slow GPU's share of the batch. Well done!" in exported
    assert "On real TensorFlow" in exported
