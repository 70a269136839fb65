"""Lesson 8 passes nbval, leaves no task process behind, and its export shows the ps placement."""
from __future__ import annotations

import re

import pytest
from lesson_tools import (LESSONS, assert_passes_nbval, assert_stopped_every_task, output_texts,
                          stored_outputs, svgs)

LESSON = LESSONS / "08_parameter_servers.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(tmp_path):
    assert_stopped_every_task(assert_passes_nbval(LESSON, tmp_path))


def test_export_shows_variables_on_ps_tasks_and_the_wire_tables(exported):
    graphs = [s for s in svgs(exported) if "/job:ps/task:1" in s and "/job:worker/task:0" in s]
    assert graphs, "the placement picture boxes the ps tasks and the worker"
    assert any(">w1</text>" in s and ">b2</text>" in s for s in graphs)
    assert 'src="data:image/png;base64,' in exported, "the bytes-per-ps bar chart"
    assert re.search(r"round robin\s+9472\s+168", exported)
    assert re.search(r"greedy by bytes\s+8192\s+1448", exported)
    assert re.search(r"total\s+14\s+19304", exported), "bytes on the wire per step"
    assert "Correct: the bytes per ps task. Well done!" in exported
    assert "Stopped the cluster" in exported


def test_by_hand_pinning_puts_each_layer_on_its_ps_task():
    """The guide's program: layer 1 on ps:0 (8320 B), layer 2 on ps:1 (1320 B); it trains."""
    text = output_texts(stored_outputs(LESSON, "with tf.Graph().as_default() as by_hand_graph:"))
    assert re.search(r"b1\s+\(32,\)\s+-> /job:ps/task:0", text)
    assert re.search(r"w2\s+\(32, 10\)\s+-> /job:ps/task:1", text)
    assert "{'ps:0': 8320, 'ps:1': 1320}" in text
    assert float(re.search(r"loss after 10 steps: ([0-9.]+)", text).group(1)) < 2.3, \
        "below a guess's loss, ln 10"


def test_each_worker_sees_one_gpu_as_gpu_0_and_runs_its_ops_there():
    """CUDA_VISIBLE_DEVICES=0 / =1: each worker has one GPU, GPU:0; its ops ran there, the
    variable on the ps."""
    text = output_texts(stored_outputs(LESSON, "gpu_cluster = tf.train.ClusterSpec(gpu_hosts)"))
    for task in range(2):
        assert f"worker {task} sees: ['task:{task}/device:CPU:0', 'task:{task}/device:GPU:0']" \
            in text
        assert f"y ran on /job:worker/replica:0/task:{task}/device:GPU:0, " \
               "w on /job:ps/replica:0/task:0/device:CPU:0" in text
