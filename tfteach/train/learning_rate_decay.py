"""Learning-rate schedules computed in the graph from the global step: exponential,
natural_exp, inverse_time, polynomial and cosine decay, piecewise_constant."""
from __future__ import annotations

import math
from typing import Any, Callable

from tfteach.errors import with_hint
from tfteach.framework.graph import Tensor
from tfteach.i18n import tr
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


def _schedule_inputs(g: Any, learning_rate: Any, global_step: Any, decay_steps: Any,
                     fn: str) -> tuple:
    if global_step is None:
        raise ValueError(f"global_step is required for {fn}.")
    lr = convert_to_tensor(learning_rate, name="learning_rate")
    return (lr, array_ops.cast(global_step, lr.dtype), array_ops.cast(decay_steps, lr.dtype))


def _progress(step: Tensor, steps: Tensor, staircase: bool) -> Tensor:
    p = math_ops.divide(step, steps)
    return math_ops.floor(p) if staircase else p


def _rate_decay(fn: str, default_name: str, args: tuple, staircase: bool, name: str | None,
                combine: Callable) -> Tensor:
    """``combine(lr, decay_rate, progress, scope)`` with progress ``step / decay_steps``
    (floored with ``staircase``), all cast to the learning rate's dtype."""
    learning_rate, global_step, decay_steps, decay_rate = args
    g = graph_of(list(args))
    with g.as_default(), g.name_scope(name or default_name) as scope:
        lr, step, steps = _schedule_inputs(g, learning_rate, global_step, decay_steps, fn)
        rate = array_ops.cast(decay_rate, lr.dtype)
        return combine(lr, rate, _progress(step, steps, staircase), scope)


def natural_exp_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Tensor:
    """``learning_rate * exp(-decay_rate * global_step / decay_steps)``."""
    return _rate_decay(
        "natural_exp_decay", "NaturalExpDecay",
        (learning_rate, global_step, decay_steps, decay_rate), staircase, name,
        lambda lr, rate, p, scope: math_ops.multiply(
            lr, math_ops.exp(math_ops.multiply(math_ops.negative(rate), p)), name=scope))


def inverse_time_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False, name: str | None = None) -> Tensor:
    """``learning_rate / (1 + decay_rate * global_step / decay_steps)``."""
    return _rate_decay(
        "inverse_time_decay", "InverseTimeDecay",
        (learning_rate, global_step, decay_steps, decay_rate), staircase, name,
        lambda lr, rate, p, scope: math_ops.divide(
            lr, math_ops.add(1.0, math_ops.multiply(rate, p)), name=scope))


def polynomial_decay(learning_rate: Any, global_step: Any, decay_steps: Any,
                     end_learning_rate: Any = 0.0001, power: Any = 1.0, cycle: bool = False,
                     name: str | None = None) -> Tensor:
    """``(lr - end) * (1 - step / decay_steps) ** power + end``, the step held at
    ``decay_steps`` (or, with ``cycle``, ``decay_steps`` stretched to the next multiple)."""
    g = graph_of([learning_rate, global_step, decay_steps, end_learning_rate, power])
    with g.as_default(), g.name_scope(name or "PolynomialDecay") as scope:
        lr, step, steps = _schedule_inputs(g, learning_rate, global_step, decay_steps,
                                           "polynomial_decay")
        end = array_ops.cast(end_learning_rate, lr.dtype)
        power = array_ops.cast(power, lr.dtype)
        if cycle:
            ceil = math_ops.negative(math_ops.floor(math_ops.negative(step / steps)))
            one = convert_to_tensor(1.0, dtype=lr.dtype)
            steps = steps * math_ops.where(math_ops.equal(step, 0.0), one, ceil)
        else:
            step = math_ops.minimum(step, steps)
        p = math_ops.divide(step, steps)
        return math_ops.add(math_ops.multiply(lr - end, math_ops.pow(1 - p, power)), end,
                            name=scope)


def cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, alpha: float = 0.0,
                 name: str | None = None) -> Tensor:
    """``learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha)``,
    the step held at ``decay_steps``."""
    g = graph_of([learning_rate, global_step, decay_steps])
    with g.as_default(), g.name_scope(name or "CosineDecay"):
        lr, step, steps = _schedule_inputs(g, learning_rate, global_step, decay_steps,
                                           "cosine_decay")
        fraction = math_ops.minimum(step, steps) / steps
        pi = convert_to_tensor(math.pi, dtype=lr.dtype)
        cosine = 0.5 * (1.0 + math_ops.cos(pi * fraction))
        return math_ops.multiply(lr, (1 - alpha) * cosine + alpha)


def piecewise_constant(x: Any, boundaries: list, values: list,
                       name: str | None = None) -> Tensor:
    """``values[0]`` while ``x <= boundaries[0]``, ``values[i]`` while
    ``boundaries[i-1] < x <= boundaries[i]``, ``values[-1]`` after the last boundary.
    (TF builds a ``case``; tfteach builds the same choice from ``Select`` ops.)"""
    if len(boundaries) != len(values) - 1:
        raise ValueError(with_hint(
            "The length of boundaries should be 1 less than the length of values",
            tr("give one value per interval: n boundaries split the steps into n + 1 "
               "intervals.")))
    g = graph_of([x] + list(boundaries) + list(values))
    with g.as_default(), g.name_scope(name or "PiecewiseConstant") as scope:
        x = convert_to_tensor(x)
        values = [convert_to_tensor(v) for v in values]
        boundaries = [array_ops.cast(b, x.dtype) for b in boundaries]
        result = values[-1]
        for i in reversed(range(len(boundaries))):
            result = math_ops.where(math_ops.less_equal(x, boundaries[i]), values[i], result)
        return array_ops.identity(result, name=scope)
