"""Lesson 3 (GPU memory) passes nbval, and its HTML export shows the memory bars, the OOM
error and two programs sharing and splitting GPUs."""
from __future__ import annotations

import pytest
from lesson_tools import LESSONS, assert_passes_nbval

LESSON = LESSONS / "03_gpu_memory.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(tmp_path):
    assert_passes_nbval(LESSON, tmp_path)


def test_export_draws_the_memory_bars_and_the_oom_error(exported):
    assert "reserved 1024, limit 1024 MiB" in exported       # the default pool: whole GPU
    assert "reserved 64, limit 1024 MiB" in exported         # allow_growth grew to the peak
    assert "ResourceExhaustedError" in exported
    assert "OOM when allocating tensor with shape[8192,8192]" in exported
    assert "Hint:" in exported


def test_export_shows_sharing_and_splitting(exported):
    assert "same device object: True" in exported
    assert "this tensor: 80.0 MiB" in exported                # B fails because of A
    assert "pci bus id: virtual:1" in exported                # B's GPU:0 is the second GPU
    assert "Correct: the largest batch. Well done!" in exported
    assert "On real TensorFlow" in exported
