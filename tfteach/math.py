"""``tf.math``: the element-wise, reduction and scan functions TF 1.x also puts under ``tf.math``.

Every name here is the same function as the top-level one (``tf.math.exp is tf.exp``), as in
TF 1.x; the ops themselves live in ``tfteach.ops``. A name TF has here and tfteach lacks is an
AttributeError that says so.
"""
from tfteach.errors import missing_attribute
from tfteach.ops.bincount_ops import bincount
from tfteach.ops.bool_reduce_ops import count_nonzero, reduce_all, reduce_any
from tfteach.ops.cumulative_ops import cumprod, cumsum
from tfteach.ops.div_no_nan import div_no_nan as divide_no_nan
from tfteach.ops.float_class_ops import is_finite, is_inf, is_nan
from tfteach.ops.gather_ops import unsorted_segment_sum
from tfteach.ops.math_ops import (abs, add, add_n, argmax, argmin, cos, divide, equal, exp, floor,
                                  greater, greater_equal, less, less_equal, log, log1p,
                                  logical_and, logical_not, logical_or, maximum, minimum,
                                  multiply, negative, not_equal, pow, reciprocal, reduce_max,
                                  reduce_mean, reduce_min, reduce_prod, reduce_sum, rsqrt, sign,
                                  sin, sqrt, square, squared_difference, subtract, truediv)
from tfteach.ops.array_ops import invert_permutation
from tfteach.ops.mod_ops import floordiv, floormod, mod
from tfteach.ops.nn_impl import l2_normalize
from tfteach.ops.reduce_composites import reduce_logsumexp, reduce_std, reduce_variance
from tfteach.ops.segment_ops import segment_sum
from tfteach.ops.nn_ops import log_softmax, sigmoid, softmax, softplus, tanh
from tfteach.ops.summary_stats import zero_fraction
from tfteach.ops.top_k_ops import in_top_k, top_k

__all__ = ["abs", "add", "add_n", "argmax", "argmin", "bincount", "cos", "count_nonzero", "cumprod", "cumsum",
           "divide", "divide_no_nan", "equal", "exp", "floor", "floordiv", "floormod", "greater",
           "greater_equal", "in_top_k", "invert_permutation", "is_finite", "is_inf", "is_nan",
           "l2_normalize", "less", "less_equal", "log", "log1p", "log_softmax", "logical_and",
           "logical_not", "logical_or", "maximum", "minimum", "mod", "multiply", "negative",
           "not_equal", "pow", "reciprocal", "reduce_all", "reduce_any", "reduce_max",
           "reduce_logsumexp", "reduce_mean", "reduce_min", "reduce_prod", "reduce_std",
           "reduce_sum", "reduce_variance", "rsqrt", "segment_sum", "sigmoid", "sign",
           "sin", "softmax", "softplus", "sqrt", "square", "squared_difference", "subtract",
           "tanh", "top_k", "truediv", "unsorted_segment_sum", "zero_fraction"]


def __getattr__(name: str):
    """A name tf.math has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.math", f"tf.math.{name}", name)
