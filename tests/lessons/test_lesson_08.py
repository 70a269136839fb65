"""Lesson 8 passes nbval, leaves no task process behind, and its export shows the ps placement,
in every language."""
from __future__ import annotations

import ast
import re

import pytest
from lesson_tools import (assert_passes_nbval, assert_stopped_every_task, code_spans, correct,
                          counterpart, message_pattern, output_texts, printed, shown,
                          stored_outputs, svgs)

from tfteach.i18n import tr

LESSON_NAME = "08_parameter_servers.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(lesson, tmp_path):
    assert_stopped_every_task(assert_passes_nbval(lesson, tmp_path))


def test_export_shows_variables_on_ps_tasks_and_the_wire_tables(exported, lang):
    graphs = [s for s in svgs(exported) if "/job:ps/task:1" in s and "/job:worker/task:0" in s]
    assert graphs, "the placement picture boxes the ps tasks and the worker"
    assert any(">w1</text>" in s and ">b2</text>" in s for s in graphs)
    assert 'src="data:image/png;base64,' in exported, "the bytes-per-ps bar chart"
    assert re.search(r"round robin\s+9472\s+168", exported)
    assert re.search(r"greedy by bytes\s+8192\s+1448", exported)
    assert re.search(r"total\s+12\s+19296", exported), "bytes on the wire per step"
    assert shown(exported, correct("the bytes per ps task", lang))
    assert shown(exported, tr("Stopped the cluster", lang=lang))


def test_by_hand_pinning_puts_each_layer_on_its_ps_task(lesson):
    """The guide's program: layer 1 on ps:0 (8320 B), layer 2 on ps:1 (1320 B); it trains."""
    text = output_texts(stored_outputs(lesson, "with tf.Graph().as_default() as by_hand_graph:"))
    assert re.search(r"b1\s+\(32,\)\s+-> /job:ps/task:0", text)
    assert re.search(r"w2\s+\(32, 10\)\s+-> /job:ps/task:1", text)
    assert "{'ps:0': 8320, 'ps:1': 1320}" in text
    assert float(re.search(r"loss after 10 steps: ([0-9.]+)", text).group(1)) < 2.3, \
        "below a guess's loss, ln 10"


def test_each_worker_sees_one_gpu_as_gpu_0_and_runs_its_ops_there(lesson):
    """CUDA_VISIBLE_DEVICES=0 / =1: each worker has one GPU, GPU:0; its ops ran there, the
    variable on the ps."""
    text = output_texts(stored_outputs(lesson, "gpu_cluster = tf.train.ClusterSpec(gpu_hosts)"))
    for task in range(2):
        assert f"worker {task} sees: ['task:{task}/device:CPU:0', 'task:{task}/device:GPU:0']" \
            in text
        assert f"y ran on /job:worker/replica:0/task:{task}/device:GPU:0, " \
               "w on /job:ps/replica:0/task:0/device:CPU:0" in text


def test_each_workers_gpu_0_is_a_different_gpu_of_the_machine(lesson, lang):
    """The text: with CUDA_VISIBLE_DEVICES=0 GPU:0 is virtual GPU 0, with =1 virtual GPU 1
    (the line printed under each worker)."""
    text = output_texts(stored_outputs(lesson, "gpu_cluster = tf.train.ClusterSpec(gpu_hosts)"))
    parts = text.split("worker 1 sees:")
    for task, part in enumerate(parts):
        is_gpu = message_pattern("{device} is virtual GPU {index}", lang, device="GPU:0",
                                 index=str(task))
        assert len(re.findall(message_pattern("{device} is virtual GPU {index}", lang,
                                              device=r"GPU:\d", index=r"\d"), part)) == 1, part
        assert re.search(is_gpu, part), part


def test_device_filters_are_explained_where_the_lesson_first_uses_them(lesson):
    text = counterpart(lesson, "Its session is made with `tf.ConfigProto(device_filters").source
    assert "tf.ConfigProto(device_filters=[...])" in code_spans(text)


def _wire_table(text: str) -> dict:
    return {(src, dst): (int(count), int(size)) for src, dst, count, size in
            re.findall(r"^(\w+:\d)\s+(\w+:\d)\s+(\d+)\s+(\d+)$", text, re.M)}


def test_each_step_moves_values_down_and_gradients_up_as_the_text_reads_the_table(lesson):
    """Round robin: ps:0 sends w1 and w2 (9472 B) and gets their gradients and the 4-byte
    learning rate back; ps:1 the same for the biases (168 B); one 4-byte control message per
    ps task goes back to the worker (each device's updates grouped under one NoOp, as TF's
    tf.group); in all about twice the model's 9640 bytes."""
    table = _wire_table(output_texts(stored_outputs(lesson, "round_robin_wire = wire_bytes(")))
    assert table == {("ps:0", "worker:0"): (3, 9472 + 4), ("ps:1", "worker:0"): (3, 168 + 4),
                     ("worker:0", "ps:0"): (3, 9472 + 4), ("worker:0", "ps:1"): (3, 168 + 4)}
    total = sum(size for _, size in table.values())
    assert 0 <= total - 2 * 9640 < 64
    greedy = _wire_table(output_texts(stored_outputs(lesson, "greedy_wire = wire_bytes(")))
    assert sum(size for _, size in greedy.values()) == total, "the same total, spread differently"


def test_per_ps_traffic_follows_the_bytes_each_ps_holds(lesson):
    text = output_texts(stored_outputs(lesson, "traffic = per_ps(table)"))
    rows = {name.strip(): (int(a), int(b)) for name, a, b in
            re.findall(r"^(round robin|greedy by bytes)\s+(\d+)\s+(\d+)$", text, re.M)}
    assert sum(rows["round robin"]) == sum(rows["greedy by bytes"])
    assert rows["round robin"][1] < rows["greedy by bytes"][1] < rows["greedy by bytes"][0]


def test_the_forward_pass_puts_variables_round_robin_on_ps_and_the_maths_on_the_worker(lesson):
    text = output_texts(stored_outputs(lesson, "for op in ['w1', 'b1', 'w2', 'b2', 'hidden'"))
    where = dict(re.findall(r"^(\w+)\s+-> (\S+)$", text, re.M))
    assert where == {"w1": "ps:0/CPU:0", "b1": "ps:1/CPU:0", "w2": "ps:0/CPU:0",
                     "b2": "ps:1/CPU:0", "hidden": "worker:0/CPU:0",
                     "logits": "worker:0/CPU:0", "loss": "worker:0/CPU:0"}


def test_reset_of_a_named_container_empties_only_that_container(lesson):
    """The picture: `kept` (default container) survives Session.reset(target, ['experiment']),
    `scratch` does not; reset(target) then empties the default container too."""
    text = output_texts(stored_outputs(lesson, "with tf.container('experiment'):"))
    assert text.splitlines() == ["added 10 to both: [11.0, 12.0]", "kept is still 11.0",
                                 "uninitialized now: [b'scratch']",
                                 "after reset(target): [b'kept' b'scratch']"]


def test_the_ring_all_reduce_sums_and_each_link_carries_what_the_arithmetic_says(lesson):
    """The text: 2·M·W on one ps link; with 2 ps tasks the busier holds w1, 85 % of the bytes,
    far from the even split 2·M·W/2; 2·M·(W−1)/W per worker in a ring (M = 9640 bytes)."""
    text = output_texts(stored_outputs(lesson, "def ring_all_reduce(grads):"))
    assert "every worker has the sum: True" in text
    sent = ast.literal_eval(re.search(r"bytes sent by each worker: (\[.*?\])", text).group(1))
    assert len(sent) == 4 and all(abs(s - 2 * 9640 * 3 / 4) <= 8 for s in sent)
    assert "M = 9640 bytes; the busier of 2 ps tasks holds 8192 of them (85%: w1)" in text
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", text, re.M)
    assert [int(w) for w, *_ in rows] == [2, 4, 8, 16]
    for w, one_ps, busier, even, ring in (map(int, row) for row in rows):
        assert (one_ps, busier, even) == (2 * 9640 * w, 2 * 8192 * w, 9640 * w)
        assert ring == 2 * 9640 * (w - 1) // w
        assert even < busier < one_ps and ring < 2 * 9640 <= even


def _modelled_rows(lesson) -> dict[tuple[str, int], tuple[float, float, float, float]]:
    """(network, workers) -> (ps by hand, ps modelled, ring by hand, ring modelled), seconds."""
    text = printed(lesson, "def through_a_ps(workers):")
    return {(net, int(w)): tuple(float(v) for v in values) for net, w, *values in re.findall(
        r"^(\d+ Gbit Ethernet) +(\d+) +([\d.]+) s +([\d.]+) s +([\d.]+) s +([\d.]+) s$", text,
        re.M)}


def test_the_modelled_ps_and_ring_steps_take_the_formulas_time(lesson):
    """Each by-hand figure is the lesson's formula (2·W·(latency + M/bandwidth) through one
    ps, 2·(W−1)·(latency + M/W/bandwidth) by the ring) and the model's step agrees with it
    to about a millisecond."""
    from tfteach.hardware import NETWORKS

    rows = _modelled_rows(lesson)
    assert len(rows) == 9
    m = 100e6
    for (net, w), (ps, ps_model, ring, ring_model) in rows.items():
        link = NETWORKS[net]
        assert ps == pytest.approx(2 * w * (link.latency_s + m / link.bandwidth), abs=6e-4)
        assert ring == pytest.approx(2 * (w - 1) * (link.latency_s + m / w / link.bandwidth),
                                     abs=6e-4)
        assert 0 <= ps_model - ps <= 0.003 and 0 <= ring_model - ring <= 0.003, (net, w)


def test_ps_time_grows_with_the_workers_and_falls_with_the_bandwidth_and_the_ring_stays_low(
        lesson):
    """The text: 12.8 s with 8 workers on 1 Gbit through one ps; the ring below 2·M/bandwidth
    (1.6 s there); ten times the bandwidth, a tenth of the time; on 100 Gbit the ps's 8-worker
    step (0.13 s) still about nine times the ring's."""
    rows = _modelled_rows(lesson)
    for net in ("1 Gbit Ethernet", "10 Gbit Ethernet", "100 Gbit Ethernet"):
        assert rows[net, 8][0] == pytest.approx(4 * rows[net, 2][0], rel=0.01)
    assert rows["1 Gbit Ethernet", 8][1] == pytest.approx(12.8, abs=0.05)
    assert all(ring < 1.6 for (net, _), (*_, ring) in rows.items() if net == "1 Gbit Ethernet")
    for w in (2, 4, 8):
        assert rows["1 Gbit Ethernet", w][1] == pytest.approx(
            10 * rows["10 Gbit Ethernet", w][1], rel=0.01)
    fast = rows["100 Gbit Ethernet", 8]
    assert fast[1] == pytest.approx(0.13, abs=0.005)
    assert 8 < fast[1] / fast[3] < 10
