"""Lesson 6 (model parallelism) passes nbval, and its HTML export shows the split layers,
the busy-time comparison with data parallelism and the pipelined step."""
from __future__ import annotations

import re

import pytest
from lesson_tools import LESSONS, assert_passes_nbval, svgs

LESSON = LESSONS / "06_model_parallelism.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(tmp_path):
    assert_passes_nbval(LESSON, tmp_path)


def test_export_compares_model_data_and_pipeline_parallelism(exported):
    for name, copied in [("model parallel", "8.0"), ("data parallel", "1.1"),
                         ("pipelined, 4 micro-batches", "8.0")]:
        assert re.search(rf"<td>{name}</td>\s*<td>[\d.]+ (µs|ms|s)</td>\s*<td>\d+% busy</td>"
                         rf"\s*<td>\d+% busy</td>\s*<td>{copied} MiB</td>", exported), name
    assert any("transfer layer1:0: 1.0 MiB" in s for s in svgs(exported)), \
        "the activations cross"


def test_export_checks_both_exercises(exported):
    assert "Correct: the placement. Well done!" in exported
    assert "Correct: the bytes copied from GPU:0 to GPU:1. Well done!" in exported
    assert "On real TensorFlow" in exported
