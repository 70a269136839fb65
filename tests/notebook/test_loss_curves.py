"""Loss curves on synthetic sync/async histories, in process and live in a kernel."""
from __future__ import annotations

import base64

import pytest
from nbkernel import one

pytest.importorskip("matplotlib")

from tfteach.notebook.loss_curves import LossCurves, plot_histories, summary


def synthetic_histories(steps: int = 10) -> dict:
    """Two workers: sync steps together (one stale gradient dropped), async interleaves."""
    sync, async_ = [], []
    for s in range(steps):
        for w in (0, 1):
            sync.append({"worker": w, "step": s, "global_step": s, "wall_time": 100.0 + s,
                         "loss": 2.0 / (s + 1), "accepted": not (s == 3 and w == 1)})
    for i in range(2 * steps):
        async_.append({"worker": i % 2, "step": i // 2, "global_step": i,
                       "wall_time": 500.0 + 0.5 * i, "loss": 2.5 / (i + 1),
                       "staleness": i % 2})
    return {"sync": sync, "async": async_}


def test_three_panels_plot_the_histories():
    fig = plot_histories(synthetic_histories())
    by_step, by_time, stale = fig.axes
    sync_line, async_line = by_step.get_lines()
    assert sync_line.get_label() == "sync" and async_line.get_label() == "async"
    assert list(async_line.get_xdata()) == list(range(20))
    assert async_line.get_ydata()[0] == pytest.approx(2.5)
    times = by_time.get_lines()[1].get_xdata()
    assert times[0] == 0.0 and times[-1] == pytest.approx(9.5), "seconds since that mode began"
    labels = sorted(c.get_label() for c in stale.collections)
    assert labels == ["async worker 0", "async worker 1", "sync: stale gradient dropped"]
    assert stale.get_ylabel() == "steps behind"


def test_summary_and_static_png():
    curves = LossCurves(synthetic_histories(), title="2 workers")
    assert summary(curves.histories).splitlines() == [
        "Loss curves:",
        "  sync: 20 records from 2 workers, last loss 0.2 at global step 9, "
        "1 stale gradient dropped",
        "  async: 20 records from 2 workers, last loss 0.125 at global step 19, "
        "max staleness 1"]
    bundle = curves._repr_mimebundle_()
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle["text/plain"] == curves.text()


def test_records_without_optional_fields_still_plot():
    fig = plot_histories({"mine": [{"worker": 0, "global_step": 1, "loss": 1.0},
                                   {"worker": 0, "global_step": 2, "loss": 0.5}]})
    assert list(fig.axes[0].get_lines()[0].get_ydata()) == [1.0, 0.5]
    assert fig.axes[1].get_lines()[0].get_xdata().size == 0


def test_curves_update_live_in_a_kernel(kernel):
    kernel.run("from tfteach.notebook import LossCurves\ncurves = LossCurves().show()")
    outputs = kernel.run(
        "for i in range(30):\n"
        "    curves.add('async', {'worker': i % 3, 'step': i // 3, 'global_step': i,\n"
        "                         'wall_time': float(i), 'loss': 1.0 / (i + 1),\n"
        "                         'staleness': i % 3})\n"
        "curves.close()")
    assert outputs == [], "updates go to the figure shown above, not to new outputs"
    first = kernel.nb.cells[-2].outputs
    text = one(first, "text/plain")
    assert text.splitlines()[1] == ("  async: 30 records from 3 workers, last loss 0.03333 at "
                                    "global step 29, max staleness 2")
    assert base64.b64decode(one(first, "image/png")).startswith(b"\x89PNG")


def _legend_colors(ax) -> list[tuple]:
    from matplotlib.colors import to_rgb
    return [to_rgb(c.get_facecolor()[0]) for c in ax.collections] or \
        [to_rgb(line.get_color()) for line in ax.get_lines()]


def test_every_series_has_its_own_colour_async_workers_included():
    fig = plot_histories(synthetic_histories())
    for ax in fig.axes:
        colors = _legend_colors(ax)
        assert len(set(colors)) == len(colors), ax.get_title()


def test_two_sync_runs_with_dropped_gradients_differ_in_colour():
    """Lesson 10's backup comparison: two sync modes, each with dropped gradients."""
    sync = synthetic_histories()["sync"]
    fig = plot_histories({"sync, 1 backup": sync, "sync, no backup": sync})
    for ax in fig.axes:
        colors = _legend_colors(ax)
        assert len(colors) == 2 and colors[0] != colors[1], ax.get_title()
