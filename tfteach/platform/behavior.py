"""TF 1.x's mode switches: ``tf.disable_v2_behavior()``, ``tf.disable_eager_execution()``,
``tf.executing_eagerly()`` and their opposites.

Programs written for ``tensorflow.compat.v1`` start with these calls. tfteach always builds
graphs and runs them in sessions (TF 1.x behaviour), so switching v2 behaviour *off* does
nothing, and switching it *on* is refused with a hint rather than silently ignored.
"""
from __future__ import annotations

from tfteach import errors
from tfteach.i18n import tr


def disable_v2_behavior() -> None:
    """Nothing to do: tfteach behaves as TF 1.x (graphs and sessions) already."""


def disable_eager_execution() -> None:
    """Nothing to do: tfteach never executes eagerly."""


def disable_v2_tensorshape() -> None:
    """Nothing to do: static dimensions are ``tf.Dimension`` objects, as in TF 1.x."""


def executing_eagerly() -> bool:
    """False: ops build a graph, and a session runs it."""
    return False


def _graph_mode_only(what: str) -> None:
    raise errors.UnimplementedError(
        f"{what} is not available: tfteach runs TensorFlow 1.x graphs in sessions only",
        hint=tr("Remove the call and build a graph, then run it with tf.Session(); for TF 2 "
                "behaviour, run the program on real TensorFlow."))


def enable_v2_behavior() -> None:
    _graph_mode_only("tf.enable_v2_behavior()")


def enable_eager_execution(*args: object, **kwargs: object) -> None:
    _graph_mode_only("tf.enable_eager_execution()")


def enable_v2_tensorshape() -> None:
    _graph_mode_only("tf.enable_v2_tensorshape()")
