"""Lesson 6 (model parallelism) passes nbval, and its HTML export shows the split layers,
the busy-time comparison with data parallelism and the pipelined step, in every language."""
from __future__ import annotations

import re

import pytest
from lesson_tools import (assert_passes_nbval, assert_tf_section_ends_the_lesson, correct,
                          output_texts, shown, stored_outputs, svgs)

LESSON_NAME = "06_model_parallelism.ipynb"

pytestmark = pytest.mark.slow


def test_lesson_passes_nbval_with_its_sanitizers(lesson, tmp_path):
    assert_passes_nbval(lesson, tmp_path)


def test_export_compares_model_data_and_pipeline_parallelism(exported):
    for name, copied in [("model parallel", "8.0"), ("data parallel", "1.1"),
                         ("pipelined, 4 micro-batches", "8.0")]:
        assert re.search(rf"<td>{name}</td>\s*<td>[\d.]+ (µs|ms|s)</td>\s*<td>\d+% busy</td>"
                         rf"\s*<td>\d+% busy</td>\s*<td>{copied} MiB</td>", exported), name
    assert any(re.search(r"<title>[^<]*\blayer1:0\b[^<]*\b1\.0 MiB", s) for s in svgs(exported)), \
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
