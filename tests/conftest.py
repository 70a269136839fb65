"""Shared fixtures: every test starts with a fresh default graph and default devices."""
from __future__ import annotations

import os
import signal
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_DEVICE_ENV = ("CUDA_VISIBLE_DEVICES", "TFTEACH_VIRTUAL_GPUS", "TFTEACH_DEVICE_SPEED")

# Tests read tfteach's English texts whatever the developer's locale; a test that wants
# another language passes lang= or sets TFTEACH_LANG itself (lessons: their own language).
os.environ["TFTEACH_LANG"] = "en"

# A learner's Python raises KeyboardInterrupt on Ctrl-C. A test run started in the
# background of a non-interactive shell inherits SIGINT ignored, and Python then keeps it
# ignored: the Ctrl-C tests' simulated presses (``_thread.interrupt_main``) would do nothing.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def fresh_graph_and_devices(monkeypatch, request):
    """A fresh default graph, and device settings back to their defaults. A test that
    leaves SIGINT's handler changed is named in a warning and the handler restored: the
    Ctrl-C tests (and a learner's Ctrl-C) need Python's own handler."""
    import tfteach as tf
    from tfteach import config

    for name in _DEVICE_ENV:
        monkeypatch.delenv(name, raising=False)
    tf.reset_default_graph()
    config.reset_virtual_gpus()
    sigint = signal.getsignal(signal.SIGINT)
    yield
    config.reset_virtual_gpus()
    if signal.getsignal(signal.SIGINT) is not sigint:
        warnings.warn(f"{request.node.nodeid} left SIGINT's handler as "
                      f"{signal.getsignal(signal.SIGINT)!r}", stacklevel=1)
        signal.signal(signal.SIGINT, sigint)


def pytest_collection_modifyitems(config, items):
    """``gpu`` tests skip cleanly unless CuPy sees a real GPU."""
    if not any("gpu" in item.keywords for item in items):
        return
    from tfteach.devices.gpu import cupy_module
    if cupy_module() is None:
        skip = pytest.mark.skip(reason="needs CuPy and a real NVIDIA GPU (pip install tfteach[gpu])")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
