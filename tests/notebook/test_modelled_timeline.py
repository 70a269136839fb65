"""`%%placement --model PROFILE`: the step's timeline in modelled time, labelled as modelled."""
from __future__ import annotations

from tfteach.notebook.placement_cell import PlacementOptions, result_displays, run_placement_cell


def test_placement_cell_with_model_adds_a_timeline_labelled_as_modelled():
    source = ("import tfteach as tf\nwith tf.device('/gpu:1'):\n"
              "    b = tf.matmul(tf.ones([256, 256]), tf.ones([256, 256]), name='product')\nb\n")
    result = run_placement_cell(source, PlacementOptions(model="8x V100 NVLink"), {})
    assert result.error is None and result.timeline is None      # nothing was run
    view = result.modelled
    assert view.text().startswith("Modelled time on 8x V100 NVLink")
    assert view.payload()["modelled_on"] == "8x V100 NVLink" and ">modelled</text>" in view.svg()
    assert "product (MatMul)" in view.text()
    shown = [type(d).__name__ for d in result_displays(result)]
    assert shown == ["PlacementView", "Note", "TimelineView"]
    wrong = run_placement_cell(source, PlacementOptions(model="no such machine"), {})
    assert type(wrong.error).__name__ == "NotFoundError" and wrong.stage == "modelling the step"
