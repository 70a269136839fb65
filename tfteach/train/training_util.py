"""The global step: one int64 counter per graph that optimizers advance once per step.

It lives in the ``global_step`` collection (and ``GLOBAL_VARIABLES``), is not trainable,
and is created with ``get_variable`` like TF's, so ``global_step:0`` names it.
"""
from __future__ import annotations

import warnings
from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Graph, GraphKeys, get_default_graph
from tfteach.ops.init_ops import Zeros
from tfteach.ops.variable_scope import get_variable


def get_global_step(graph: Graph | None = None) -> Any:
    """The global step variable (or tensor ``global_step:0``) of ``graph``, or None."""
    g = graph or get_default_graph()
    found = g.get_collection(GraphKeys.GLOBAL_STEP)
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        warnings.warn("Multiple tensors in global_step collection.", stacklevel=2)
        return None
    try:
        return g.get_tensor_by_name("global_step:0")
    except KeyError:
        return None


def create_global_step(graph: Graph | None = None) -> Any:
    """Create the global step (int64 scalar, starting at 0); it must not exist yet."""
    g = graph or get_default_graph()
    if get_global_step(g) is not None:
        raise ValueError('"global_step" already exists.')
    with g.as_default(), g.name_scope(None):
        return get_variable(GraphKeys.GLOBAL_STEP, shape=[], dtype=dtypes.int64,
                            initializer=Zeros(), trainable=False,
                            collections=[GraphKeys.GLOBAL_VARIABLES, GraphKeys.GLOBAL_STEP])


def get_or_create_global_step(graph: Graph | None = None) -> Any:
    """The graph's global step, created on first use."""
    g = graph or get_default_graph()
    step = get_global_step(g)
    return step if step is not None else create_global_step(g)


def global_step(sess: Any, global_step_tensor: Any) -> int:
    """The current value of the global step, as a Python int."""
    return int(sess.run(global_step_tensor))
