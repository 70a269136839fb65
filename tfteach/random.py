"""``tf.random``: TF 1.x's namespace for the seeded random ops (``tf.random.normal`` is
``tf.random_normal``, ``tf.random.uniform`` is ``tf.random_uniform``, ...).

The ops live in ``tfteach.ops.random_ops``; a name TF has here and tfteach lacks is an
AttributeError that says so.
"""
from tfteach.errors import missing_attribute
from tfteach.ops.multinomial_ops import categorical, multinomial
from tfteach.ops.random_ops import get_seed, set_random_seed, truncated_normal
from tfteach.ops.random_ops import random_normal as normal
from tfteach.ops.random_ops import random_shuffle as shuffle
from tfteach.ops.random_ops import random_uniform as uniform

__all__ = ["categorical", "get_seed", "multinomial", "normal", "set_random_seed", "shuffle",
           "truncated_normal", "uniform"]


def __getattr__(name: str):
    """A name tf.random has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.random", f"tf.random.{name}", name)
