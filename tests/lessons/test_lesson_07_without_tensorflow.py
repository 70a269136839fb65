"""Lesson 7 where TensorFlow cannot be imported: its "Try it on real TensorFlow" cells say how
to install it and raise nothing, so Run All reaches the clean-up cell, which stops every task.

The kernel starts with a ``sitecustomize`` first on its path whose import hook refuses
``tensorflow`` (``import tensorflow`` raises ModuleNotFoundError, as where it is missing),
while TensorFlow stays installed for the rest of the test suite.
"""
from __future__ import annotations

import os

import nbformat
import pytest
from lesson_tools import LESSONS, assert_stopped_every_task, lesson_env, output_texts
from nbclient import NotebookClient

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

NO_TENSORFLOW = '''
import sys


class NoTensorFlow:
    """Refuses tensorflow as a missing module."""

    def find_spec(self, name, path=None, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoTensorFlow())
'''


def test_run_all_without_tensorflow_says_how_to_install_it_and_cleans_up(tmp_path):
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(NO_TENSORFLOW)
    registry = tmp_path / "registry"
    env = lesson_env(registry, "en")
    env["PYTHONPATH"] = os.pathsep.join([str(shim), env["PYTHONPATH"]])
    nb = nbformat.read(LESSONS / "07_local_cluster.ipynb", as_version=4)
    client = NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(LESSONS)}})
    client.execute(env=env)               # CellExecutionError if any cell raised
    needs = [c for c in nb.cells if c.metadata.get("tfteach", {}).get("needs") == "tensorflow"]
    said = "\n".join(output_texts(c.outputs) for c in needs)
    assert "FailedPreconditionError" in said or "needs TensorFlow" in said, said
    assert 'pip install "tfteach[conformance]"' in said, said
    assert "Stopped the cluster" in output_texts(nb.cells[-1].outputs), "the clean-up cell ran"
    assert_stopped_every_task(registry)
