"""Placement and timeline views built from real sessions, in this process."""
from __future__ import annotations

import json
import re

import pytest
from nbkernel import TOWERS

import tfteach as tf
from tfteach.notebook.placement_cell import PlacementOptions, run_placement_cell
from tfteach.notebook.placement_view import PLACEMENT_MIME, PlacementView, placement_dot
from tfteach.notebook.timeline_view import (TIMELINE_MIME, TimelineView, timeline_svg,
                                            timeline_text, transfer_arrows)


@pytest.fixture
def towers():
    result = run_placement_cell(TOWERS, PlacementOptions(run=True), {"tf": tf})
    yield result
    result.close()


def _fills(svg: str) -> set[str]:
    return set(re.findall(r'fill="(#[0-9a-fA-F]{6})"', svg))


def test_default_bundle_has_the_json_svg_and_text(towers):
    bundle, metadata = towers.view._repr_mimebundle_()
    assert set(bundle) == {PLACEMENT_MIME, "image/svg+xml", "text/plain"}
    json.dumps(bundle[PLACEMENT_MIME])  # plain JSON
    assert bundle["text/plain"].endswith("AddN (AddN) -> CPU:0")
    assert metadata == {PLACEMENT_MIME: {"color_by": "device", "show_transfers": True}}


def test_colouring_by_op_type_redraws_the_svg_and_tells_the_json_renderer(towers):
    view = towers.view
    by_device, _ = view._repr_mimebundle_()
    view.set_view(color_by="type", show_transfers=False)
    by_type, metadata = view._repr_mimebundle_()
    assert by_type[PLACEMENT_MIME] == by_device[PLACEMENT_MIME], "settings are not in the payload"
    assert metadata[PLACEMENT_MIME] == {"color_by": "type", "show_transfers": False}
    assert by_type["image/svg+xml"] != by_device["image/svg+xml"]
    assert "colour = op type" in by_type["image/svg+xml"]
    assert "colour = device" in by_device["image/svg+xml"]
    assert by_type["text/plain"] == by_device["text/plain"]


def test_hiding_transfers_keeps_the_layout_but_hides_cross_device_edges(towers):
    shown = placement_dot(towers.view.data, "device", True)
    hidden = placement_dot(towers.view.data, "device", False)
    assert shown.count("penwidth=2.2") == 2 and "16 B" in shown
    assert hidden.count('-> "AddN" [style=invis]') == 2 and "16 B" not in hidden


def test_each_device_keeps_its_colour_across_graphs(towers):
    single = run_placement_cell("with tf.device('/gpu:1'):\n    x = tf.constant(1.0)",
                                PlacementOptions(), {"tf": tf})
    gpu1 = re.search(r'"__legend_\d+" \[label="GPU:1", fillcolor="(#\w+)"', towers.view.dot())
    alone = re.search(r'"__legend_\d+" \[label="GPU:1", fillcolor="(#\w+)"', single.view.dot())
    assert gpu1 and alone and gpu1.group(1) == alone.group(1)
    single.close()


def test_tooltips_show_requested_and_assigned_devices(towers):
    dot = towers.view.dot()
    assert ('tooltip="AddN (AddN)\\nrequested: /device:CPU:0\\nassigned: '
            '/job:localhost/replica:0/task:0/device:CPU:0"') in dot


def test_unknown_colouring_is_refused(towers):
    with pytest.raises(ValueError, match="color_by must be one of"):
        towers.view.set_view(color_by="memory")


def test_widget_controls_redraw_the_picture(towers):
    pytest.importorskip("ipywidgets")
    widget = towers.view.widget()
    controls, picture = widget.children
    colour, transfers = controls.children[:2]
    before = picture.value
    colour.value = "type"
    assert picture.value != before and "colour = op type" in picture.value
    transfers.value = False
    assert towers.view.show_transfers is False
    assert "16 B" not in picture.value


def test_timeline_text_is_stable_and_svg_has_lanes_bars_and_arrows(towers):
    timeline = towers.timeline
    text = timeline.text()
    lines = text.splitlines()
    assert re.fullmatch(r"Timeline: 3 devices, 7 ops, 2 transfers; step took .+", lines[0])
    assert lines[1:] == ["  CPU:0: AddN (AddN)",
                         "  GPU:0: Const (Const), Const_1 (Const), MatMul (MatMul)",
                         "  GPU:1: Const_2 (Const), Const_3 (Const), MatMul_1 (MatMul)",
                         "  transfer MatMul:0: GPU:0 -> CPU:0 (16 B)",
                         "  transfer MatMul_1:0: GPU:1 -> CPU:0 (16 B)"]
    shuffled = dict(timeline.data, ops=list(reversed(timeline.data["ops"])))
    assert timeline_text(shuffled) == text
    svg = timeline.svg()
    assert svg.count("<title>") >= 7 + 2 + 3
    assert svg.count("marker-end=") == 5, "send and deliver per transfer, and the legend's"
    assert ">GPU:1</text>" in svg and ">MatMul</text>" in svg
    assert "marker-end=" not in timeline.svg(show_transfers=False)


def test_timeline_arrows_leave_the_producers_bar_and_enter_the_consumers(towers):
    data = towers.timeline.data
    ops = {o["name"]: o for o in data["ops"]}
    arrows = transfer_arrows(data)
    assert sorted((a["kind"], a["consumer"]) for a in arrows) == [
        ("deliver", "AddN"), ("deliver", "AddN"), ("send", None), ("send", None)]
    for a in arrows:
        t = data["transfers"][a["transfer"]]
        assert a["x1_us"] >= a["x0_us"], "no arrow goes back in time"
        if a["kind"] == "send":
            assert a["x0_us"] == ops[t["src_op"]]["end_us"]
            assert a["src"] == ops[t["src_op"]]["device"]
        else:
            consumer = ops[a["consumer"]]
            assert consumer["start_us"] <= a["x1_us"] <= consumer["end_us"]
            assert a["x0_us"] >= ops[t["src_op"]]["end_us"]


def test_timeline_lane_labels_are_elided_with_the_full_name_in_the_tooltip():
    long = "/job:worker/replica:0/task:0/device:CPU:0"
    data = {"devices": [{"name": long, "short": "a-very-long-job-name:0/CPU:0" * 2}],
            "ops": [], "transfers": [], "step_us": 10}
    svg = timeline_svg(data)
    label = re.search(r"<title>" + re.escape(long) + r"</title>([^<]*)</text>", svg).group(1)
    assert label.endswith("/CPU:0") and "…" in label and len(label) == 32


def test_timeline_bundle_and_chrome_trace(towers, tmp_path):
    bundle, metadata = towers.timeline._repr_mimebundle_()
    assert set(bundle) == {TIMELINE_MIME, "image/svg+xml", "text/plain"}
    assert metadata == {TIMELINE_MIME: {"color_by": "type", "show_transfers": True}}
    path = towers.timeline.save_chrome_trace(tmp_path / "step.json")
    trace = json.loads(path.read_text())
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("ph") == "M"}
    assert names == {d["name"] for d in bundle[TIMELINE_MIME]["devices"]}
    assert {e["args"]["name"] for e in trace["traceEvents"] if e.get("cat") == "Op"} >= \
        {"AddN", "MatMul", "MatMul_1"}


def test_timeline_save_button_writes_the_trace(towers, tmp_path, monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.chdir(tmp_path)
    button, where = towers.timeline.extra_controls()
    button.click()
    saved = list(tmp_path.glob("timeline-*.json"))
    assert len(saved) == 1 and json.loads(saved[0].read_text())["traceEvents"]
    assert saved[0].name in where.value


def test_timeline_from_data_only_cannot_save_a_trace(towers):
    with pytest.raises(ValueError, match="no Chrome trace"):
        TimelineView(towers.timeline.data).save_chrome_trace()


def test_placement_view_of_a_graph_with_unknown_shapes_has_no_bytes():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/gpu:0"):
            x = tf.placeholder(tf.float32, shape=[None, 2], name="x")
        with tf.device("/gpu:1"):
            tf.reduce_sum(x, name="s")
    sess = tf.Session(graph=graph)
    from tfteach.notebook.placement_view import placement_data

    data = placement_data(graph.get_operations(), sess.placement().devices, sess.list_devices())
    edge = next(e for e in data["edges"] if e["src"] == "x")
    assert edge["dst"] == "s" and edge["cross_device"] is True and edge["bytes"] is None
    assert 'label=" ?"' in PlacementView(data).dot(), "unknown sizes are drawn as ?"
    sess.close()
