"""Variable initializers (TF 1.x ``init_ops``): ``tf.zeros_initializer()`` and friends.

An initializer is a callable ``init(shape, dtype=None, partition_info=None) -> Tensor``
that builds the ops computing a variable's first value; ``get_variable`` calls it under
``<variable>/Initializer/``. Random initializers are seeded like every random op
(``tf.set_random_seed`` plus ``seed=``). No state: an initializer is a description.
"""
from __future__ import annotations

import math
from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.i18n import tr
from tfteach.ops import array_ops, random_ops


class Initializer:
    """Base class: subclasses build the initial value in ``__call__``."""

    def __init__(self, dtype: Any = dtypes.float32) -> None:
        self.dtype = dtypes.as_dtype(dtype)

    def _dtype(self, dtype: Any) -> dtypes.DType:
        return self.dtype if dtype is None else dtypes.as_dtype(dtype)

    def _float_dtype(self, dtype: Any) -> dtypes.DType:
        dt = self._dtype(dtype)
        if not dt.is_floating:
            raise ValueError(with_hint(f"Expected floating point type, got {dt.name}.", tr(
                "{initializer} makes random floats; use tf.zeros_initializer() or "
                "tf.constant_initializer() for ints.", initializer=type(self).__name__)))
        return dt

    def __call__(self, shape: Any, dtype: Any = None, partition_info: Any = None) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict:
        return {k: (v.name if isinstance(v, dtypes.DType) else v) for k, v in vars(self).items()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.zeros(shape, self._dtype(dtype))


class Ones(Initializer):
    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.ones(shape, self._dtype(dtype))


class Constant(Initializer):
    """Every element ``value`` (a scalar), or ``value`` itself (a list/array of that shape)."""

    def __init__(self, value: Any = 0, dtype: Any = dtypes.float32,
                 verify_shape: bool = False) -> None:
        super().__init__(dtype)
        self.value = value
        self.verify_shape = verify_shape

    def __call__(self, shape, dtype=None, partition_info=None):
        return array_ops.constant(self.value, dtype=self._dtype(dtype), shape=shape,
                                  verify_shape=self.verify_shape)


class RandomUniform(Initializer):
    def __init__(self, minval: float = 0, maxval: float | None = None, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_uniform(shape, self.minval, self.maxval,
                                         self._float_dtype(dtype), seed=self.seed)


class RandomNormal(Initializer):
    def __init__(self, mean: float = 0.0, stddev: float = 1.0, seed: int | None = None,
                 dtype: Any = dtypes.float32) -> None:
        super().__init__(dtype)
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.random_normal(shape, self.mean, self.stddev,
                                        self._float_dtype(dtype), seed=self.seed)


class TruncatedNormal(RandomNormal):
    """Normal samples, redrawn when more than two standard deviations from the mean."""

    def __call__(self, shape, dtype=None, partition_info=None):
        return random_ops.truncated_normal(shape, self.mean, self.stddev,
                                           self._float_dtype(dtype), seed=self.seed)


def _fans(shape: list) -> tuple[int, int]:
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2]) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class VarianceScaling(Initializer):
    """Scale / fan: ``normal`` draws truncated normals with stddev sqrt(scale / n),
    ``uniform`` draws from [-limit, limit] with limit sqrt(3 * scale / n) (TF 1.x)."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "normal",
                 seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        if scale <= 0.0:
            raise ValueError("`scale` must be positive float.")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"Invalid `mode` argument: {mode}")
        if distribution not in ("normal", "uniform"):
            raise ValueError(f"Invalid `distribution` argument: {distribution}")
        super().__init__(dtype)
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype=None, partition_info=None):
        dt = self._float_dtype(dtype)
        dims = [int(d) for d in shape]
        # a part of a partitioned variable scales by the whole variable's fans, as in TF
        full = [int(d) for d in partition_info.full_shape] if partition_info else dims
        fan_in, fan_out = _fans(full)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        scale = self.scale / max(1.0, n)
        if self.distribution == "normal":
            return random_ops.truncated_normal(dims, 0.0, math.sqrt(scale), dt, seed=self.seed)
        limit = math.sqrt(3.0 * scale)
        return random_ops.random_uniform(dims, -limit, limit, dt, seed=self.seed)


class GlorotUniform(VarianceScaling):
    """Xavier uniform: limit sqrt(6 / (fan_in + fan_out)); get_variable's default."""

    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed, dtype)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed: int | None = None, dtype: Any = dtypes.float32) -> None:
        super().__init__(1.0, "fan_avg", "normal", seed, dtype)


# TF 1.x's names (``tf.zeros_initializer()`` builds an instance).
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant
random_uniform_initializer = RandomUniform
random_normal_initializer = RandomNormal
truncated_normal_initializer = TruncatedNormal
variance_scaling_initializer = VarianceScaling
glorot_uniform_initializer = GlorotUniform
glorot_normal_initializer = GlorotNormal
zeros = Zeros
ones = Ones
constant = Constant
random_uniform = RandomUniform
random_normal = RandomNormal
truncated_normal = TruncatedNormal
variance_scaling = VarianceScaling
glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal


def global_variables() -> Any:
    """``tf.initializers.global_variables()``: the op that initializes every global variable."""
    from tfteach.ops.state_ops import global_variables_initializer
    return global_variables_initializer()


def local_variables() -> Any:
    from tfteach.ops.state_ops import local_variables_initializer
    return local_variables_initializer()


def variables(var_list: list, name: str = "init") -> Any:
    from tfteach.ops.state_ops import variables_initializer
    return variables_initializer(var_list, name=name)
