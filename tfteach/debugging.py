"""``tf.debugging``: TF 1.x's namespace for assertions and numeric checks
(``tf.debugging.assert_equal`` is ``tf.assert_equal``, ``check_numerics``, ``Assert``,
``is_nan``, ...).

Every name here is the same function as the top-level one; the ops live in ``tfteach.ops``
(``check_ops``, ``numerics_ops``, ``logging_ops``). A name TF has here and tfteach lacks is
an AttributeError that says so.
"""
from tfteach.errors import missing_attribute
from tfteach.ops.check_ops import (assert_equal, assert_greater, assert_greater_equal,
                                   assert_less, assert_less_equal, assert_negative,
                                   assert_non_negative, assert_non_positive, assert_none_equal,
                                   assert_positive, assert_rank, assert_type)
from tfteach.ops.check_ops import assert_integer, assert_rank_at_least, assert_scalar
from tfteach.ops.float_class_ops import is_finite, is_inf, is_nan
from tfteach.ops.logging_ops import Assert
from tfteach.ops.numerics_ops import check_numerics
from tfteach.ops.numerics_ops import verify_tensor_all_finite as assert_all_finite

__all__ = ["Assert", "assert_all_finite", "assert_equal", "assert_greater",
           "assert_greater_equal", "assert_integer", "assert_less", "assert_less_equal",
           "assert_negative", "assert_non_negative", "assert_non_positive", "assert_none_equal",
           "assert_positive", "assert_rank", "assert_rank_at_least", "assert_scalar",
           "assert_type", "check_numerics", "is_finite", "is_inf", "is_nan"]


def __getattr__(name: str):
    """A name tf.debugging has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.debugging", f"tf.debugging.{name}", name)
