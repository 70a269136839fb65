"""Helpers for driving real Jupyter kernels (nbclient) in the notebook tests.

``KernelSession.run(source)`` executes one cell in a live kernel and returns that cell's
outputs (display updates already applied, as nbclient stores them). ``kernel_env()`` makes
kernels import this checkout's tfteach even when it is not pip-installed. ``TOWERS`` is the
seed tutorial's cell: two towers' products summed on the CPU.
"""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PLACEMENT_MIME = "application/vnd.tfteach.placement+json"
TIMELINE_MIME = "application/vnd.tfteach.timeline+json"

TOWERS = """c = []
for d in ['/gpu:0', '/gpu:1']:
    with tf.device(d):
        a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
        b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2])
        c.append(tf.matmul(a, b))
with tf.device('/cpu:0'):
    total = tf.add_n(c)
total
"""


def kernel_env() -> None:
    """Put the repository root on PYTHONPATH for kernels started from now on."""
    paths = [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))


class KernelSession:
    """One notebook whose cells run one at a time in a live kernel."""

    def __init__(self, client: NotebookClient, nb: nbformat.NotebookNode) -> None:
        self.client = client
        self.nb = nb

    def run(self, source: str, allow_error: bool = False) -> list:
        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        self.client.allow_errors = allow_error
        self.client.execute_cell(cell, len(self.nb.cells) - 1)
        return cell.outputs


def data_outputs(outputs: list, mime: str) -> list:
    """The ``mime`` payloads of ``outputs``, in order."""
    return [o["data"][mime] for o in outputs if mime in o.get("data", {})]


def one(outputs: list, mime: str):
    found = data_outputs(outputs, mime)
    assert len(found) == 1, f"expected one {mime} output, got {len(found)}: {outputs}"
    return found[0]


def stream_text(outputs: list) -> str:
    return "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")


def kinds(outputs: list) -> list[str]:
    return [o["output_type"] for o in outputs]
