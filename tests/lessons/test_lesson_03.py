"""Lesson 3 (GPU memory) passes nbval, and its stored outputs show what its text claims: the
memory bars, GPU options that hold for the whole process, the OOM error, two sessions of one
process sharing a pool, TF's ALREADY_EXISTS for another visible_device_list, and three real
processes at fraction 0.4 on one GPU, the third failing; in every language."""
from __future__ import annotations

import re

import pytest
from lesson_tools import (assert_passes_nbval, code_spans, counterpart, hint_label, output_texts,
                          shown, stored_outputs, timeline_transfers)

from tfteach import i18n

LESSON_NAME = "03_gpu_memory.ipynb"

pytestmark = pytest.mark.slow


def said(lesson, marker: str) -> str:
    """What the first code cell containing ``marker`` printed when the lesson was executed."""
    return output_texts(stored_outputs(lesson, marker))


def test_lesson_passes_nbval_with_its_sanitizers(lesson, tmp_path):
    assert_passes_nbval(lesson, tmp_path)


def test_export_draws_the_memory_bars_and_the_oom_error(exported, lang):
    assert "reserved 1024, limit 1024 MiB" in exported       # the default pool: whole GPU
    assert "reserved 64, limit 1024 MiB" in exported         # allow_growth grew to the peak
    assert "ResourceExhaustedError" in exported
    assert "OOM when allocating tensor with shape[8192,8192]" in exported
    assert shown(exported, hint_label(lang))


def test_a_second_session_of_the_process_keeps_the_first_sessions_options(lesson):
    text = said(lesson, "a second session asking for per_process_gpu_memory_fraction=0.5")
    second = text.split("a second session asking")[1]
    assert second.count("reserved 1024, limit 1024 MiB") == 2


def test_a_new_program_gets_its_fraction_and_allow_growth(lesson):
    text = said(lesson, "'a new program with ' + title")
    fraction, growth = text.split("a new program with allow_growth=True")
    assert fraction.count("reserved 512, limit 512 MiB") == 2
    assert growth.count("reserved 1, limit 1024 MiB") == 2


def test_two_sessions_of_one_process_share_a_pool_and_one_fails_because_of_the_other(lesson):
    assert "same device object: True" in said(lesson, "print('same device object:'")
    assert "this tensor: 80.0 MiB" in said(lesson, "program_b.run(total_b)")


def test_another_visible_device_list_in_the_process_is_already_exists(lesson, lang):
    text = said(lesson, "same_process = tf.Session(")
    assert ("AlreadyExistsError: TensorFlow device (GPU:0) is being mapped to multiple CUDA "
            "devices (1 now, and 0 previously), which is not supported.") in text
    assert hint_label(lang) in text


def test_three_programs_at_fraction_04_two_fit_and_the_third_fails(lesson):
    text = said(lesson, "run_together([(f'program {n}', 0.4, {})")
    assert "program 1: step ran" in text and "program 2: step ran" in text
    assert "program 3: step ran" not in text
    assert re.search(r"program 3: ResourceExhaustedError: OOM when allocating tensor with "
                     r"shape\[300,1024,256\]", text)
    assert "program 3: E tfteach] failed to allocate 409.60MiB" in text      # 0.4 of 1 GiB
    assert "reserved: 195.9 MiB, limit: 409.6 MiB" in text                   # what the text says
    assert "program 1: E tfteach]" not in text and "program 2: E tfteach]" not in text


def test_programs_split_by_cuda_visible_devices_both_run(lesson):
    text = said(lesson, "('program A', 0, {'CUDA_VISIBLE_DEVICES': '0'})")
    assert "program A: step ran" in text and "program B: step ran" in text
    assert "failed to allocate" not in text


def test_on_real_tensorflow_names_the_differences(lesson):
    """The section's notes name each difference by its code: the ledger, the devices' calls,
    TF's allocator log and its ALREADY_EXISTS error."""
    section = counterpart(lesson, "## On real TensorFlow")
    spans = " ".join(code_spans(section.source))
    for difference in ("TFTEACH_GPU_LEDGER", "reset_virtual_gpus", "list_local_devices",
                       "cuda_driver.cc", "ALREADY_EXISTS"):
        assert difference in spans, difference


def test_the_split_tensor_fits_and_only_the_sums_travel(lesson, lang):
    """Exercise 3: two 48 MiB halves, one per 64 MiB GPU; 4 bytes cross."""
    text = output_texts(stored_outputs(lesson, "part = tf.ones([3072, 4096], name=f'part_{i}')"))
    assert "total:0 = 2.5165824e+07" in text
    assert timeline_transfers(text, lang) == [("Sum_1:0", "GPU:1", "GPU:0", i18n.size(4, lang))]


def test_the_table_on_the_cpu_sends_only_the_looked_up_rows(lesson, lang):
    """Exercise 4: the 96 MiB table OOMs on GPU:0; on the CPU only 5 rows (20 KiB) cross."""
    start = output_texts(stored_outputs(lesson, "table = tf.ones([24576, 1024], name='table')"))
    assert "ResourceExhaustedError" in start
    text = output_texts(stored_outputs(lesson, "with tf.device('/cpu:0'):\n    table = tf.ones"))
    assert "total:0 = 40960.0" in text
    assert timeline_transfers(text, lang) == [("rows:0", "CPU:0", "GPU:0",
                                               i18n.size(20 * 1024, lang))]
