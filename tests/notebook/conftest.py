"""The ``kernel`` fixture: one real Jupyter kernel per test module (see ``nbkernel``)."""
from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbkernel import KernelSession, kernel_env


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    kernel_env()
    workdir = tmp_path_factory.mktemp("kernel")
    nb = nbformat.v4.new_notebook()
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    with client.setup_kernel(cwd=str(workdir)):
        session = KernelSession(client, nb)
        session.workdir = workdir
        session.run("%load_ext tfteach\nimport tfteach as tf")
        yield session
