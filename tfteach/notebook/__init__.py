"""tfteach's Jupyter face: magics, views and widgets. Nothing else in tfteach imports it.

Modules (each imported on first use, so the JupyterLab server extension in ``server`` can
import this package without loading IPython, ipywidgets or matplotlib):

- ``magics``: ``%%placement`` and ``%tfteach`` (``%load_ext tfteach``);
- ``placement_cell``: what ``%%placement`` does, without IPython;
- ``tf_backend`` / ``backend_compare``: ``%%placement --backend tensorflow`` (the cell on real
  TensorFlow, read into the same views) and ``--backend compare`` (what differs);
- ``placement_view`` / ``timeline_view``: the placement graph and device timeline views
  (custom MIME JSON + SVG + deterministic text, live controls), on ``view.View``;
- ``graphviz_svg``: DOT to SVG with system Graphviz or its WebAssembly build;
- ``loss_curves``: sync vs async loss curves and staleness (matplotlib);
- ``cluster_view``: the cluster status table/widget and the kernel's LocalCluster;
- ``progress``: progress with ETA for long runs, stoppable with the stop button;
- ``displays``: error boxes, notes, fetched values, the device table;
- ``palette``: the colours every view and the JupyterLab extension share (and their contrast);
- ``server``: the JupyterLab extension's REST handlers;
- ``grading``: ``tfteach lessons grade`` (learners' notebooks run in fresh kernels).
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PlacementView": "tfteach.notebook.placement_view",
    "TimelineView": "tfteach.notebook.timeline_view",
    "LossCurves": "tfteach.notebook.loss_curves",
    "plot_histories": "tfteach.notebook.loss_curves",
    "ClusterStatus": "tfteach.notebook.cluster_view",
    "Progress": "tfteach.notebook.progress",
    "ErrorBox": "tfteach.notebook.displays",
    "DeviceTable": "tfteach.notebook.displays",
    "render_svg": "tfteach.notebook.graphviz_svg",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tfteach.notebook' has no attribute '{name}'")
