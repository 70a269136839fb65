"""The shared palette: label contrast, the extension's copy, themed feedback boxes."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfteach.errors import InvalidArgumentError
from tfteach.lessons import check
from tfteach.notebook import palette
from tfteach.notebook.displays import ErrorBox
from tfteach.notebook.placement_view import placement_dot

REPO = Path(__file__).resolve().parents[2]
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


@pytest.mark.parametrize("fill", palette.DEVICE_FILLS + palette.OP_FILLS)
def test_every_fill_has_a_label_colour_of_contrast_at_least_4_5(fill):
    assert palette.contrast(fill, palette.label_color(fill)) >= palette.MIN_CONTRAST


def test_contrast_is_wcags_ratio():
    assert palette.contrast("#000000", "#FFFFFF") == pytest.approx(21.0)
    assert palette.contrast("#777777", "#FFFFFF") == pytest.approx(4.48, abs=0.01)


def test_the_extensions_palette_is_generated_from_this_module():
    written = (REPO / "labextension" / "src" / "palette.ts").read_text()
    assert written == palette.ts_source(), (
        "run: python -m tfteach.notebook.palette > labextension/src/palette.ts")


def test_op_types_never_get_a_device_colour():
    styles = {palette.op_style(i) for i in range(12)}
    assert len(styles) == 12
    assert not {fill for fill, _ in styles} & set(palette.DEVICE_FILLS)


def test_graphviz_node_labels_contrast_with_their_fill():
    data = {"nodes": [{"name": n, "type": "Const", "requested_device": "",
                       "assigned_device": d} for n, d in (("a", CPU0), ("b", GPU0))],
            "edges": [], "devices": []}
    pairs = re.findall(r'fillcolor="(#\w+)", fontcolor="(#\w+)"', placement_dot(data))
    assert len(pairs) >= 2
    assert all(palette.contrast(f, t) >= 4.5 for f, t in pairs)


def test_static_legend_lists_only_the_devices_the_graph_uses():
    devices = [{"name": f"/job:localhost/replica:0/task:0/device:GPU:{i}", "device_type": "GPU",
                "description": ""} for i in range(4)]
    data = {"nodes": [{"name": "a", "type": "Const", "requested_device": "",
                       "assigned_device": devices[2]["name"]}], "edges": [], "devices": devices}
    legend = re.findall(r'"__legend_\d+" \[label="([^"]+)"', placement_dot(data))
    assert legend == ["GPU:2"]


def test_feedback_boxes_take_the_themes_text_colour_over_a_translucent_tint():
    for html in (check(1, 2).html(), check(2, 2).html(),
                 ErrorBox(InvalidArgumentError("bad")).html()):
        assert "color:var(--jp-content-font-color1,inherit)" in html
        assert re.search(r"background:#[0-9A-F]{6}24", html)


def test_hints_render_backticks_as_code():
    box = ErrorBox(InvalidArgumentError("bad", hint="call `sess.run(x)` <now>"))
    assert "call <code>sess.run(x)</code> &lt;now&gt;" in box.html()
    feedback = check(1, 2, hint="use `tf.add`")
    assert "use <code>tf.add</code>" in feedback.html()
    assert "`tf.add`" in feedback.text()


def test_loss_curve_figures_are_transparent_with_ink_that_reads_on_light_and_dark():
    import io

    from matplotlib.image import imread

    from tfteach.notebook.loss_curves import figure_png, plot_histories

    fig = plot_histories({"sync": [{"worker": 0, "global_step": 1, "wall_time": 0.0,
                                    "loss": 2.0}]}, title="t")
    pixels = imread(io.BytesIO(figure_png(fig)))
    assert pixels.shape[2] == 4 and pixels[0, 0, 3] == 0, "transparent background"
    assert fig.axes[0].title.get_color() == palette.FIGURE_INK
    for page in ("#FFFFFF", "#111111"):
        assert palette.contrast(palette.FIGURE_INK, page) >= 4.0
