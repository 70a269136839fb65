"""What the multi-host tests share besides fixtures (a module of its own: test modules
cannot import ``conftest`` when other folders' tests are collected with them).

``TOKEN``: the cluster token every task of the suite gets (a non-loopback task needs one);
``ON_TF``: the marks of a test's TensorFlow case; ``environment(backend, extra)``: a
program's environment.
"""
from __future__ import annotations

import os

import pytest

from harness import ROOT, TF_QUIET, has_tensorflow

TOKEN = "multihost-suite-token"
ON_TF = [pytest.mark.conformance,
         pytest.mark.skipif(not has_tensorflow(), reason="TensorFlow is not installed "
                            "(pip install -e '.[conformance]')")]


def environment(backend: str = "tfteach", extra: dict | None = None) -> dict:
    """A program's environment on ``backend``: unbuffered, this checkout importable, the
    suite's cluster token, and ``extra``."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", TFTEACH_VIRTUAL_GPUS="0",
               TFTEACH_CLUSTER_TOKEN=TOKEN, PYTHONPATH=str(ROOT))
    if backend == "tensorflow":
        env.update(TF_QUIET)
        env.pop("GRPC_VERBOSITY", None)     # importing tfteach set it: TF then logs nothing
    env.update(extra or {})
    return env
