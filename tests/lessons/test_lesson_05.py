"""Lesson 5 (data parallelism) passes nbval, and its HTML export shows the towers' shared
variables, a traced step, the scaling table and the slow GPU's idle time, in every language."""
from __future__ import annotations

import re

import pytest
from lesson_tools import (DURATION, assert_passes_nbval, assert_tf_section_ends_the_lesson,
                          correct, microseconds, output_texts, printed, shown, stored_outputs)

LESSON_NAME = "05_data_parallelism.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(lesson, tmp_path):
    assert_passes_nbval(lesson, tmp_path)


def test_export_shows_towers_sharing_one_set_of_variables(exported):
    assert "model/hidden1/weights:0" in exported and "asks for /device:CPU:0" in exported
    assert "GPU:0: 46 ops   tower_0/ (46)" in exported
    assert "GPU:1: 46 ops   tower_1/ (46)" in exported
    assert "test accuracy 0.9" in exported                     # the two towers learned


def test_export_shows_scaling_and_the_slow_gpu(exported, lang):
    assert re.search(r"<td>4</td>\s*<td>1024</td>\s*<td>[\d.]+ steps/s</td>\s*"
                     r"<td>\d+ examples/s</td>\s*<td>[\d.]+x</td>", exported)
    assert "0.3x" in exported                                  # the slow GPU in the table
    assert re.search(rf"<td>GPU:0</td>(\s*<td>{DURATION}</td>){{3}}", exported)
    assert exported.count('src="data:image/png;base64,') >= 3   # digits, loss, bar chart
    assert shown(exported, correct("the slow GPU's share of the batch", lang))


def test_the_lesson_ends_with_the_tower_code_for_real_tensorflow(lesson, exported):
    """The "On real TensorFlow" section: a heading of the page, with the towers for TF."""
    assert_tf_section_ends_the_lesson(lesson, exported)


def test_without_reuse_the_second_tower_cannot_make_its_variables(lesson):
    assert "ValueError: Variable model/hidden1/weights already exists, disallowed." in printed(
        lesson, "with tf.variable_scope('model'):                 # no reuse!")


def test_six_shared_variables_all_ask_for_the_cpu(lesson):
    lines = [line for line in printed(lesson, "print('trainable variables (one set").splitlines()
             if "asks for" in line]
    assert len(lines) == 6 and all(line.endswith("asks for /device:CPU:0") for line in lines)


def test_the_cpu_averages_and_updates_and_24_copies_cross_per_step(lesson):
    text = printed(lesson, "for dev in sorted(meta.step_stats.dev_stats")
    assert "CPU:0: 38 ops   AddN/ (6), GradientDescent/ (8), model/ (12), truediv/ (12)" in text
    assert "copies per step: 24, 1.3 MiB in all" in text


def test_the_loss_falls_and_the_towers_learn(lesson):
    """The text: the loss falls and the network recognises most test digits."""
    found = re.search(r"training loss ([\d.]+) in the first 5, ([\d.]+) in the last 5; "
                      r"test accuracy ([\d.]+)", printed(lesson, "history = []"))
    first, last, accuracy = map(float, found.groups())
    assert last < first / 3 and accuracy >= 0.9


def test_the_fast_gpu_waits_for_most_of_the_step_beside_the_slow_one(lesson):
    """The text: GPU:0 (speed 1) is idle for most of the step; GPU:1 (0.3) computes."""
    table = next(o["data"]["text/markdown"] for o in stored_outputs(lesson, "idle_report(slow_meta)")
                 if "text/markdown" in o.get("data", {}))
    rows = {r[0]: [microseconds(v, u) for v, u in re.findall(DURATION, r[1])]
            for r in re.findall(r"\| (GPU:\d) \|(.*)\|", table)}
    step, busy, idle = rows["GPU:0"]
    assert idle > busy
    assert rows["GPU:1"][1] > rows["GPU:1"][2]


def test_the_exercise_checks_compare_with_the_lessons_own_average_and_split(lesson, lang):
    import nbformat

    cells = [c for c in nbformat.read(lesson, as_version=4).cells
             if c.metadata.get("tfteach", {}).get("solution") in ("5.3", "5.4", "5.5")
             and "check(" in c.source]
    assert [output_texts(c.outputs).strip() for c in cells] == [
        correct("the averaged gradients", lang), correct("the rows each tower gets", lang),
        correct("your tower loop", lang)]


def test_the_starters_step_runs_on_one_gpu_beside_the_cpu(lesson):
    """Exercise 5's text: with the starter, one GPU does all the work (the timeline of the
    learner's step, stored as the starter left it)."""
    text = printed(lesson, "my_train_op = tower_train_op(tower_loss")
    lanes = re.findall(r"^  ((?:CPU|GPU):\d+):", text, re.M)
    assert lanes == ["CPU:0", "GPU:0"], lanes


def _scaling(lesson) -> tuple[int, dict[int, tuple[float, float]]]:
    """The cores the kernel could use, and per GPU count: (steps/s, speed-up)."""
    outputs = stored_outputs(lesson, "results = throughput()")
    cores = int(re.search(r"CPU cores this kernel may use: (\d+)", output_texts(outputs)).group(1))
    table = next(o["data"]["text/markdown"] for o in outputs
                 if "text/markdown" in o.get("data", {}))
    rows = re.findall(r"\| (\d) \| \d+ \| ([\d.]+) steps/s \| \d+ examples/s \| ([\d.]+)x \|",
                      table)
    return cores, {int(n): (float(steps), float(speedup)) for n, steps, speedup in rows}


def test_no_gpu_count_reaches_its_own_speed_up_and_steps_per_second_fall(lesson):
    """The text: on any computer no row's speed-up equals its number of GPUs, so steps per
    second go down as GPUs are added; with one core the speed-up stays near 1x."""
    cores, rows = _scaling(lesson)
    assert sorted(rows) == [1, 2, 4] and rows[1][1] == 1.0
    assert all(speedup < n for n, (_, speedup) in rows.items() if n > 1), rows
    assert rows[1][0] > rows[2][0] > rows[4][0], rows
    if cores == 1:
        assert rows[2][1] <= 1.25 and rows[4][1] <= 1.25, rows


def _modelled_scaling(lesson) -> dict[int, tuple[float, float, float]]:
    """GPUs -> (modelled step ms, speed-up, CPU busy ms) on 8x V100 NVLink."""
    text = printed(lesson, "hardware.get('8x V100 NVLink')")
    return {int(n): (float(step), float(speed), float(cpu)) for n, step, speed, cpu in
            re.findall(r"^ +(\d) +([\d.]+) ms +[\d,]+ +([\d.]+)x +([\d.]+) ms$", text, re.M)}


def test_modelled_v100s_each_add_compute_but_no_row_reaches_its_gpu_count(lesson):
    """The text: modelled, 4 GPUs handle about 3.2 times the examples per second of one, 8
    about 5.5 times; no row reaches its GPU count; the step and the CPU's work grow with the
    towers."""
    rows = _modelled_scaling(lesson)
    assert sorted(rows) == [1, 2, 4, 8]
    assert rows[4][1] == pytest.approx(3.2, abs=0.05) and rows[8][1] == pytest.approx(5.5, abs=0.1)
    for n, (step, speed, cpu) in rows.items():
        assert speed < n or n == 1
    steps, cpus = [rows[n][0] for n in (1, 2, 4, 8)], [rows[n][2] for n in (1, 2, 4, 8)]
    assert steps == sorted(steps) and cpus == sorted(cpus) and cpus[0] < cpus[-1]


def test_the_by_hand_pcie_copy_is_the_models_and_over_half_the_one_gpu_step(lesson):
    """Each GPU's PCIe lanes carry the variables in and the gradients out (plus its batch):
    latency per tensor + bytes / bandwidth, as in the model, the same for 1 GPU as for 8."""
    from tfteach.hardware import get

    text = printed(lesson, "hardware.get('8x V100 NVLink')")
    link = get("8x V100 NVLink").host_link
    variable_bytes = 4 * (64 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10)
    expected = 14 * link.latency_s + (2 * variable_bytes + 256 * 64 * 4 + 256 * 8) / link.bandwidth
    by_hand = float(re.search(r"= ([\d.]+) µs$", text, re.M).group(1))
    assert by_hand == pytest.approx(expected * 1e6, abs=0.05)
    lanes = [float(us) for us in re.findall(r"GPU:0's lanes ([\d.]+) µs", text)]
    assert len(lanes) == 2 and all(us == pytest.approx(by_hand, abs=0.1) for us in lanes)
    assert by_hand > 0.5 * _modelled_scaling(lesson)[1][0] * 1e3


def test_four_towers_over_1_gbit_through_a_ps_are_slower_than_one_gpu(lesson):
    """The text: over 1 Gbit Ethernet with the variables on a ps, 2 x 4 copies of the
    variables pass the server's port each step, about 289 ms by hand and by the model's
    formula, where one V100 does a whole step in 1.2 ms."""
    text = printed(lesson, "hardware.get('8x V100 NVLink')")
    found = re.search(r"by hand 2 x 4 x ([\d,]+) bytes / 125 MB/s = ([\d.]+) ms per step; "
                      r"hardware.parameter_server_time: ([\d.]+) ms", text)
    variable_bytes, by_hand, modelled = (float(found.group(1).replace(",", "")),
                                         float(found.group(2)), float(found.group(3)))
    assert by_hand == pytest.approx(2 * 4 * variable_bytes / 125e6 * 1e3, abs=0.05)
    assert modelled == pytest.approx(by_hand, rel=0.01) and round(modelled) == 289
    one_gpu_ms = _modelled_scaling(lesson)[1][0]
    assert round(one_gpu_ms, 1) == 1.2 and modelled > 100 * one_gpu_ms
