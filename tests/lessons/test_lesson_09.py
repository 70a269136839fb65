"""Lesson 9 passes nbval, leaves no task process behind, and its export compares both
replications, in every language."""
from __future__ import annotations

import ast
import re

import pytest
from lesson_tools import (assert_passes_nbval, assert_stopped_every_task, correct, output_texts,
                          printed, shown, stored_outputs, svgs)

from tfteach.i18n import tr

LESSON_NAME = "09_in_graph_vs_between_graph.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(lesson, tmp_path):
    assert_stopped_every_task(assert_passes_nbval(lesson, tmp_path))


def test_export_shows_towers_on_two_workers_and_the_comparison(exported, lang):
    graphs = [s for s in svgs(exported) if "/job:worker/task:1" in s and "/job:ps/task:0" in s]
    assert any(">tower_1/MatMul</text>" in s for s in graphs), "the in-graph placement"
    assert "in-graph: 60 session.run calls, final global step 60" in exported
    assert "final global step: 120" in exported, "two async workers, 60 steps each"
    assert 'src="data:image/png;base64,' in exported, "the loss curves"
    assert re.search(r"graphs / sessions\s+1 / 1\s+2 / 2", exported)
    assert shown(exported, correct("the devices (variable job, matmul)", lang))
    assert shown(exported, tr("Stopped the cluster", lang=lang))


def test_the_async_updates_of_both_workers_interleave(lesson):
    """The text: the order of the 120 updates, as runs of one worker's updates in a row; each
    worker made 60 of them, and they took turns at least once."""
    text = output_texts(stored_outputs(lesson, "runs = [(worker, len(list(group)))"))
    runs = ast.literal_eval(re.search(r"in a row\): (\[.*\])", text).group(1))
    assert sum(n for worker, n in runs if worker == 0) == 60
    assert sum(n for worker, n in runs if worker == 1) == 60
    assert len(runs) >= 2
    assert f"120 updates in {len(runs)} runs" in text


def test_each_step_moves_the_model_down_and_its_gradients_up(lesson):
    """The text: per worker, the values (9640 bytes) come down and the gradients (9640) go up;
    in-graph exactly that per tower, between-graph plus a tiny tensor or two."""
    in_graph = output_texts(stored_outputs(lesson, "show_wire('in-graph, one step:'"))
    for pair in ["ps:0      -> worker:0", "ps:0      -> worker:1",
                 "worker:0  -> ps:0", "worker:1  -> ps:0"]:
        assert re.search(rf"{re.escape(pair)}\s+4 tensors\s+9640 bytes", in_graph), pair
    between = output_texts(stored_outputs(lesson, "show_wire(\"between-graph, worker 0's step:\""))
    sizes = [int(b) for b in re.findall(r"tensors\s+(\d+) bytes", between)]
    assert len(sizes) == 4 and all(9640 <= size <= 9640 + 32 for size in sizes), sizes
    assert sum(sizes) > 4 * 9640, sizes


def test_the_in_graph_step_runs_ops_on_all_three_tasks(lesson):
    text = output_texts(stored_outputs(lesson, "ops_per_task = Counter("))
    counts = ast.literal_eval(re.search(r"ops per task: (\{.*\})", text).group(1))
    assert set(counts) == {"ps:0", "worker:0", "worker:1"} and min(counts.values()) > 0


def test_each_remedy_tames_the_early_jumps_of_stale_gradients(lesson):
    """The text under the stale-gradient simulation: stale gradients at the full rate jump far
    above the fresh run early on; a smaller rate, dropping and warm-up each lower that peak;
    the smaller rate ends slower, dropping refuses gradients, warm-up ends jumping again."""
    text = output_texts(stored_outputs(lesson, "def train_with_staleness("))
    table = {name.strip(): (float(peak), float(last), int(dropped)) for name, peak, last, dropped
             in re.findall(r"^(.{30}) +([\d.]+) +([\d.]+) +(\d+)$", text, re.M)}
    fresh, stale = table["fresh gradients, rate 1.0"], table["stale (0-9), rate 1.0"]
    smaller, drop = table["stale, smaller rate 0.25"], table["stale, drop if older than 3"]
    warm = table["stale, warm-up over 60 steps"]
    assert stale[0] > 2 * fresh[0]
    assert all(remedy[0] < stale[0] / 2 for remedy in (smaller, drop, warm))
    assert smaller[1] > fresh[1] and drop[2] > 0 and warm[1] > stale[1]
    assert [row[2] for row in (fresh, stale, smaller, warm)] == [0, 0, 0, 0]


def test_shards_are_disjoint_strided_and_cover_every_example(lesson):
    text = output_texts(stored_outputs(lesson, "shards = [np.arange(len(x_train))[i::num_workers]"))
    for i in range(3):
        assert f"worker {i}: " in text and f"rows {[i, i + 3, i + 6, i + 9, i + 12]} ..." in text
    assert text.count("shard() agrees: True") == 3
    assert "no overlap, nothing missing: True" in text


def test_a_bigger_batch_needs_a_bigger_rate_and_a_big_rate_a_warm_up(lesson):
    """The text: 4x the batch at the same rate ends where one worker ends; 4x the rate gets
    much further; rate 4.0 jumps above ln 10 at first, and a warm-up avoids the jump."""
    text = output_texts(stored_outputs(lesson, "def train_with_batch("))
    rows = {name.strip(): (float(a), float(b)) for name, a, b in
            re.findall(r"^(.{34}) +([\d.]+) +([\d.]+)$", text, re.M)}
    one, same_rate = rows["1 worker, batch 32, rate 0.25"], rows["4 workers, batch 128, rate 0.25"]
    scaled = rows["4 workers, batch 128, rate 1.0"]
    big, warm = rows["16 workers, batch 512, rate 4.0"], rows["16 workers, rate 4.0, warm-up 10"]
    assert abs(same_rate[1] - one[1]) < 0.05
    assert scaled[1] < one[1] / 2
    assert big[0] > 2.303 > warm[0]


def _modelled(lesson) -> tuple[str, dict[str, tuple[float, float, float]]]:
    """The modelled cell's text and, per step, (network µs, busiest device µs, step µs)."""
    text = printed(lesson, "hardware.get('2 hosts x 2 V100, 1 Gbit')")
    steps = {name: (float(net), float(busy), float(step)) for name, net, busy, step in
             re.findall(r"modelled, (.+?): network +([\d.]+) µs, busiest device +([\d.]+) µs, "
                        r"step +([\d.]+) µs", text)}
    return text, steps


def test_the_by_hand_ps_traffic_is_the_models_and_the_network_sets_the_step(lesson):
    """1 Gbit Ethernet, 2 workers in-graph: 2 workers x 2 ways x (4 tensors x latency + 9640
    bytes / bandwidth) through the ps, as the model has it; the maths is about a tenth."""
    from tfteach.hardware import get

    text, steps = _modelled(lesson)
    link = get("2 hosts x 2 V100, 1 Gbit").network
    by_hand = float(re.search(r"= ([\d.]+) µs through the ps", text).group(1))
    assert by_hand == pytest.approx(4 * (4 * link.latency_s + 9640 / link.bandwidth) * 1e6,
                                    abs=0.05)
    network, busy, step = steps["in-graph, 2 workers"]
    assert network == pytest.approx(by_hand, abs=0.1)
    assert 1.0e3 < network < 1.2e3, "about 1.1 ms, as the text says"
    assert busy < 0.15 * network and step >= network


def test_in_graph_traffic_grows_with_the_workers_and_a_between_graph_step_is_half(lesson):
    _, steps = _modelled(lesson)
    two, four, eight = (steps[f"in-graph, {n} workers"][0] for n in (2, 4, 8))
    assert four == pytest.approx(2 * two, rel=0.01) and eight == pytest.approx(4 * two, rel=0.01)
    assert steps["in-graph, 8 workers"][2] > 3 * steps["in-graph, 2 workers"][2]
    own = steps["between-graph, one worker's step"][2]
    assert 0.4 < own / steps["in-graph, 2 workers"][2] < 0.6, "about half as long"
