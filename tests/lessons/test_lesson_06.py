"""Lesson 6 (model parallelism) passes nbval, and its HTML export shows the split layers,
the busy-time comparison with data parallelism and the pipelined step, in every language."""
from __future__ import annotations

import re

import pytest
from lesson_tools import (DURATION, assert_passes_nbval, assert_tf_section_ends_the_lesson,
                          correct, message_pattern, output_texts, printed, shown, stored_outputs,
                          svgs)

from tfteach import i18n

LESSON_NAME = "06_model_parallelism.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(lesson, tmp_path):
    assert_passes_nbval(lesson, tmp_path)


def test_export_compares_model_data_and_pipeline_parallelism(exported, lang):
    for name, copied in [("model parallel", "8.0"), ("data parallel", "1.1"),
                         ("pipelined, 4 micro-batches", "8.0")]:
        assert re.search(rf"<td>{name}</td>\s*<td>{DURATION}</td>\s*<td>\d+% busy</td>"
                         rf"\s*<td>\d+% busy</td>\s*<td>{copied} MiB</td>", exported), name
    mib = re.escape(i18n.size(2**20, lang))          # 1.0 MiB, 1,0 МиБ
    assert any(re.search(rf"<title>[^<]*\blayer1:0\b[^<]*\b{mib}", s) for s in svgs(exported)), \
        "the activations cross (a transfer slice's tooltip)"


def test_export_checks_both_exercises(exported, lang):
    assert shown(exported, correct("the placement", lang))
    assert shown(exported, correct("the bytes copied from GPU:0 to GPU:1", lang))


def test_the_lesson_ends_with_the_split_model_for_real_tensorflow(lesson, exported):
    """The "On real TensorFlow" section: a heading of the page, with the program for TF."""
    assert_tf_section_ends_the_lesson(lesson, exported)


def _busy_tables(lesson) -> list[str]:
    import nbformat

    return [o["data"]["text/markdown"] for c in nbformat.read(lesson, as_version=4).cells
            if c.cell_type == "code" and c.source.startswith("busy_report([")
            for o in c.outputs if "text/markdown" in o.get("data", {})]


def test_split_gpus_take_turns_so_together_they_do_about_one_gpus_work(lesson):
    """The text: each GPU is busy for only part of the step; you pay for two and use about
    one (the layers depend on each other, so the lanes hardly overlap)."""
    row = re.search(r"\| model parallel \| [^|]+ \| (\d+)% busy \| (\d+)% busy \|",
                    _busy_tables(lesson)[0])
    busy = [int(b) for b in row.groups()]
    assert all(b < 100 for b in busy) and sum(busy) <= 115, busy


def test_data_parallelism_copies_fewer_bytes_than_the_split_model(lesson):
    copied = dict(re.findall(r"\| (model parallel|data parallel) \|.*\| ([\d.]+) MiB \|",
                             _busy_tables(lesson)[0]))
    assert float(copied["data parallel"]) < float(copied["model parallel"])


def test_without_colocation_every_gradient_lands_on_gpu_0(lesson):
    """Exercise 3's start: minimize without colocate_gradients_with_ops."""
    text = output_texts(stored_outputs(lesson, ".GradientDescentOptimizer(0.3).minimize(loss)"))
    grads = [line for line in text.splitlines() if line.startswith("gradients/")
             and "MatMul_grad/MatMul" in line]
    assert grads and all(line.endswith("-> GPU:0") for line in grads)


def _modelled_rows(text: str) -> dict[tuple[int, str], float]:
    """(batch, training step) -> the modelled step in ms, from the modelled table."""
    return {(int(batch), name): float(step) for batch, name, step in re.findall(
        r"^ *(\d+)  (one GPU|model parallel|pipelined, 4 micro-batches) +([\d.]+) ms", text,
        re.M)}


def test_modelled_pipelining_shortens_the_big_step_and_lengthens_the_small_one(lesson):
    """The modelled view (8x V100 NVLink): for the big batch, pipelining overlaps copies and
    maths (much shorter than the split step); for the lesson's batch the small kernels' fixed
    costs make it longer; one GPU is fastest at both sizes."""
    rows = _modelled_rows(printed(lesson, "hardware.get('8x V100 NVLink')"))
    assert len(rows) == 6
    big = {name: step for (batch, name), step in rows.items() if batch == 65536}
    small = {name: step for (batch, name), step in rows.items() if batch == 1024}
    assert big["pipelined, 4 micro-batches"] < 0.7 * big["model parallel"]
    assert small["pipelined, 4 micro-batches"] > small["model parallel"]
    for sizes in (big, small):
        assert sizes["one GPU"] == min(sizes.values())


def test_the_by_hand_activation_copy_is_the_models_copy_each_way(lesson):
    """65536 x 1024 floats over NVLink: bytes / bandwidth + latency, as the text says (5.37 ms),
    and as the model's copies between the GPUs took, each way."""
    from tfteach.hardware import get

    text = printed(lesson, "hardware.get('8x V100 NVLink')")
    link = get("8x V100 NVLink").gpu_link
    by_hand = float(re.search(r"= ([\d.]+) ms each way", text).group(1))
    assert by_hand == pytest.approx((65536 * 1024 * 4 / link.bandwidth + link.latency_s) * 1e3,
                                    abs=0.005)
    assert by_hand == 5.37, "the figure the text quotes"
    copies = re.findall(r"modelled: GPU:(\d) -> GPU:(\d) .*: ([\d,]+) bytes, ([\d.]+) ms", text)
    assert sorted((a, b) for a, b, *_ in copies) == [("0", "1"), ("1", "0")]
    for *_, nbytes, ms in copies:
        assert int(nbytes.replace(",", "")) >= 65536 * 1024 * 4
        assert float(ms) == pytest.approx(by_hand, abs=0.02)


def test_the_modelled_pipeline_starts_with_only_gpu_0_computing(lesson, lang):
    """The bubble on the modelled timeline: GPU:1's first product starts after GPU:0's first
    one ended; the timeline says it is modelled, on the profile."""
    outputs = stored_outputs(lesson, "hardware.get('8x V100 NVLink')")
    data = next(o["data"]["application/vnd.tfteach.timeline+json"] for o in outputs
                if "application/vnd.tfteach.timeline+json" in o.get("data", {}))
    assert data["modelled_on"] == "8x V100 NVLink"
    first = {gpu: min((op for op in data["ops"] if op["op"] == "MatMul"
                       and op["device"].endswith(gpu)), key=lambda op: op["start_us"])
             for gpu in ("GPU:0", "GPU:1")}
    assert first["GPU:1"]["start_us"] >= first["GPU:0"]["end_us"]
    caption = message_pattern("Modelled time on {profile}: a model of that machine, not "
                              "measured here.", lang, profile=re.escape("8x V100 NVLink"))
    assert re.search(caption, output_texts(outputs))
