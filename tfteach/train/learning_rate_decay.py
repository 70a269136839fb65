"""Learning-rate schedules computed in the graph from the global step."""
from __future__ import annotations

from typing import Any

from tfteach.framework.graph import Tensor
from tfteach.ops import array_ops, math_ops
from tfteach.ops.common import convert_to_tensor, graph_of


def exponential_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Tensor:
    """``learning_rate * decay_rate ** (global_step / decay_steps)``.

    With ``staircase=True`` the exponent is floored, so the rate drops in steps.
    """
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    g = graph_of([learning_rate, global_step, decay_steps, decay_rate])
    with g.as_default(), g.name_scope(name or "ExponentialDecay") as scope:
        lr = convert_to_tensor(learning_rate, name="learning_rate")
        dtype = lr.dtype
        step = array_ops.cast(global_step, dtype)
        steps = array_ops.cast(decay_steps, dtype)
        rate = array_ops.cast(decay_rate, dtype)
        p = math_ops.divide(step, steps)
        if staircase:
            p = math_ops.floor(p)
        return math_ops.multiply(lr, math_ops.pow(rate, p), name=scope)
