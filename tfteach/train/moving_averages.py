"""``tf.train.ExponentialMovingAverage``: shadow variables that track variables' averages.

``apply(var_list)`` creates, for each variable ``v``, a shadow variable
``v/ExponentialMovingAverage`` colocated with ``v`` (``_class: loc:@v``, on ``v``'s device,
so under ``replica_device_setter`` it lands on ``v``'s ps task), initialised from ``v``'s
initial value, and returns one op (``ExponentialMovingAverage``, a group) that moves every
shadow: ``shadow -= (1 - decay) * (shadow - v)`` (``AssignMovingAvg``, an ``AssignSub``).
With ``num_updates``, ``decay = min(decay, (1 + n) / (10 + n))``. Tensors that are not
variables get a zero-initialised shadow. ``zero_debias=True`` is not supported (refused).
"""
from __future__ import annotations

from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, Tensor, get_default_graph
from tfteach.i18n import tr
from tfteach.ops import array_ops, control_ops, math_ops, state_ops
from tfteach.ops.common import convert_to_tensor

__all__ = ["ExponentialMovingAverage", "assign_moving_average"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def assign_moving_average(variable: Any, value: Any, decay: Any, zero_debias: bool = True,
                          name: str | None = None) -> Tensor:
    """``variable -= (1 - decay) * (variable - value)`` (TF's ``AssignMovingAvg``)."""
    if zero_debias:
        raise NotImplementedError("tfteach's assign_moving_average supports only "
                                  "zero_debias=False.")
    g = variable.graph
    with g.name_scope(name or "AssignMovingAvg") as scope:
        with g.colocate_with(variable):
            one_minus = convert_to_tensor(1.0 - decay, name="decay") \
                if not isinstance(decay, Tensor) else math_ops.subtract(1.0, decay, name="decay")
            if one_minus.dtype is not variable.dtype.base_dtype:
                one_minus = array_ops.cast(one_minus, variable.dtype.base_dtype)
            return state_ops.assign_sub(variable, (variable.value() - value) * one_minus,
                                        name=scope)


class ExponentialMovingAverage:
    """Maintains moving averages of variables (TF 1.x ``tf.train.ExponentialMovingAverage``)."""

    def __init__(self, decay: float, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage") -> None:
        if zero_debias:
            raise NotImplementedError("tfteach's ExponentialMovingAverage supports only "
                                      "zero_debias=False.")
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages: dict[int, Any] = {}

    @property
    def name(self) -> str:
        return self._name

    def _shadow(self, var: Any) -> Any:
        g = var.graph     # outside any control_dependencies block, as TF's init_scope
        with g.control_dependencies(None), g.colocate_with(var), \
                g.name_scope(var.op.name + "/"):
            if isinstance(var, state_ops.Variable):
                init = var.initial_value
                g.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
            else:
                init = array_ops.zeros_like(var)
            return state_ops.Variable(init, trainable=False, name=self._name)

    def apply(self, var_list: list | None = None) -> Any:
        """Create the shadow variables (once per variable) and return the op that updates
        them all."""
        var_list = state_ops.trainable_variables() if var_list is None else list(var_list)
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError(with_hint(
                    f"The variables must be half, float, or double: {var.name}",
                    tr("average only float variables, e.g. "
                       "ema.apply(tf.trainable_variables()).")))
            if id(var) not in self._averages:
                self._averages[id(var)] = (var, self._shadow(var))
        g = var_list[0].graph if var_list else get_default_graph()
        with g.as_default(), g.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtype=dtypes.float32, name="decay")
            if self._num_updates is not None:
                n = array_ops.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = math_ops.minimum(decay, (1.0 + n) / (10.0 + n))
            updates = [assign_moving_average(self._averages[id(v)][1], v, decay,
                                             zero_debias=False) for v in var_list]
            return control_ops.group(*updates, name=scope)

    def average(self, var: Any) -> Any:
        """The shadow variable of ``var`` (None if ``apply`` has not seen it)."""
        entry = self._averages.get(id(var))
        return entry[1] if entry else None

    def average_name(self, var: Any) -> str:
        """``<var op name>/ExponentialMovingAverage``, the shadow's name (also in checkpoints)."""
        return var.op.name + "/" + self._name

    def variables_to_restore(self, moving_avg_variables: list | None = None) -> dict:
        """A Saver's ``var_list`` that restores each variable from its moving average."""
        if moving_avg_variables is None:
            moving_avg_variables = (state_ops.trainable_variables()
                                    + get_default_graph().get_collection(
                                        GraphKeys.MOVING_AVERAGE_VARIABLES))
        name_map = {self.average_name(v): v for v in moving_avg_variables}
        averaged = {v.name for v in moving_avg_variables}
        for v in state_ops.global_variables():
            if v.name not in averaged and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
