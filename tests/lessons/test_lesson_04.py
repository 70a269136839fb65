"""Lesson 4 (how a graph runs) passes nbval, and its HTML export shows the ready-queue
walk-through, timelines with overlapping GPUs and the cost of copies, in every language."""
from __future__ import annotations

import re

import pytest
from lesson_tools import (DURATION, assert_passes_nbval, assert_tf_section_ends_the_lesson,
                          correct, message_pattern, microseconds, output_texts, plural_pattern, printed, shown,
                          stored_outputs, svgs, timeline_transfers)

LESSON_NAME = "04_how_a_graph_runs.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(lesson, tmp_path):
    assert_passes_nbval(lesson, tmp_path)


def test_export_walks_through_the_pending_counts(exported, lang):
    assert "pending counts: {'x': 0, 'w': 0, 'b': 0, 'xw': 2, 'sq': 1, 'y': 2, 'out': 2}" in exported
    assert "7. run out" in exported
    assert shown(exported, correct("the pending counts", lang))


def test_export_draws_timelines_and_copy_costs(exported, lang):
    timelines = [s for s in svgs(exported) if "tfteach-tl-arrow" in s]
    assert len(timelines) >= 6
    assert any(">GPU:0</text>" in s and ">GPU:1</text>" in s and ">MatMul</text>" in s
               for s in timelines), "the two GPUs' products on one timeline"
    assert "67108864" in exported                              # the 64 MiB copy's bytes
    assert shown(exported, correct("the number of transfers", lang))


def test_the_lesson_ends_with_the_tracing_program_for_real_tensorflow(lesson, exported):
    """The "On real TensorFlow" section: a heading of the page, with TF's tracing code."""
    assert_tf_section_ends_the_lesson(lesson, exported)


def _copy_table(lesson) -> tuple[str, dict[int, float]]:
    outputs = stored_outputs(lesson, "def copy_cost(n_floats):")
    table = next(o["data"]["text/markdown"] for o in outputs
                 if "text/markdown" in o.get("data", {}))
    times = {int(b): microseconds(v, u) for b, v, u in
             re.findall(rf"\| (\d+) \| {DURATION} \|", table)}
    return output_texts(outputs), times


def test_copy_time_grows_at_least_with_the_bytes_as_the_text_says(lesson):
    """The text: small copies cost a few microseconds whatever their size; from a megabyte
    on, 16 times the bytes takes 16 times as long or more, as the line above the table says."""
    printed, times = _copy_table(lesson)
    assert len(times) == 5
    assert times[1024] < 50 and times[65536] < 50, "the fixed cost of small copies"
    ratio = times[16 << 20] / times[1 << 20]
    assert ratio >= 16 * 0.75, ratio
    stated = int(re.search(r"16 MiB took (\d+) times as long as 1 MiB", printed).group(1))
    assert stated == pytest.approx(ratio, rel=0.1, abs=1), "the printed ratio is the table's"


def test_two_gpus_run_the_products_at_once_and_one_gpu_never_does(lesson):
    """Section 3's claim is structural: on one GPU one product waits for the other; on two
    they overlap on the timeline (the step time is not asserted: it is noisy here)."""
    text = output_texts(stored_outputs(lesson, "def both_running_us(meta):"))
    one, two = (re.search(rf"{name}: both products running for {DURATION}", text)
                for name in ("one GPU", "two GPUs"))
    assert one.group(1) == "0"
    assert microseconds(*two.groups()) > 0


def test_making_x_on_each_gpu_leaves_only_the_three_results_to_copy(lesson, lang):
    text = output_texts(stored_outputs(lesson, "x0 = tf.ones([256, 256], name='x0')"))
    assert re.search(plural_pattern("{n} transfer", "{n} transfers", 3, lang), text)
    copied = [tensor for tensor, *_ in timeline_transfers(text, lang)]
    assert sorted(copied) == ["a:0", "b:0", "c:0"], "the three sums, not x"


def test_a_control_dependency_makes_sq_wait_for_xw(lesson):
    text = output_texts(stored_outputs(lesson, "with tf.control_dependencies([xw]):"))
    assert "'sq': 2" in text
    assert "4. run xw    counts: sq 1→0, y 1→0" in text


def test_modelled_two_gpus_take_a_little_more_than_half_the_one_gpu_step(lesson, lang):
    """The modelled view (2x V100 PCIe): each product costs the by-hand launch + 2 n³ FLOPs
    / peak, and on two GPUs the step takes a little more than half as long as on one."""
    from tfteach.hardware import get

    text = printed(lesson, "hardware.get('2x V100 PCIe')")
    gpu = get("2x V100 PCIe").gpu
    by_hand = float(re.search(r"= ([\d.]+) µs per product", text).group(1))
    assert by_hand == pytest.approx((gpu.launch_s + 2 * 1024 ** 3 / gpu.flops["float32"]) * 1e6,
                                    abs=0.05)
    products = [int(us) for us in re.findall(r"product_\d (\d+) µs", text)]
    assert len(products) == 4 and all(abs(us - by_hand) <= 1 for us in products), products
    steps = dict(re.findall(r"modelled, (one GPU|two GPUs): .*; step ([\d.]+) µs", text))
    ratio = float(steps["two GPUs"]) / float(steps["one GPU"])
    assert 0.5 < ratio < 0.65, ratio
    stated = float(re.search(r"takes ([\d.]+) of the one-GPU step", text).group(1))
    assert stated == pytest.approx(ratio, abs=0.005)
    caption = message_pattern("Modelled time on {profile}: a model of that machine, not "
                              "measured here.", lang, profile=re.escape("2x V100 PCIe"))
    assert re.search(caption, text), "the modelled timeline says it is modelled"


def test_the_modelled_products_run_side_by_side_on_two_gpus(lesson):
    """The modelled timeline's payload: the two products on different GPUs, overlapping."""
    outputs = stored_outputs(lesson, "hardware.get('2x V100 PCIe')")
    data = next(o["data"]["application/vnd.tfteach.timeline+json"] for o in outputs
                if "application/vnd.tfteach.timeline+json" in o.get("data", {}))
    assert data["modelled_on"] == "2x V100 PCIe"
    products = [op for op in data["ops"] if op["op"] == "MatMul"]
    assert len({op["device"] for op in products}) == 2
    overlap = min(op["end_us"] for op in products) - max(op["start_us"] for op in products)
    assert overlap > 0.9 * (products[0]["end_us"] - products[0]["start_us"])
