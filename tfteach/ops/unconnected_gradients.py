"""``tf.UnconnectedGradients``: what ``tf.gradients`` returns for an x that ys do not use.

``NONE`` (the default) gives ``None``; ``ZERO`` gives zeros shaped like the x. The values are
the strings ``'none'`` and ``'zero'``, which ``tf.gradients`` also accepts, as in TF.
"""
from __future__ import annotations

import enum


class UnconnectedGradients(enum.Enum):
    """The gradient of an x that no y depends on: ``None`` or zeros like the x."""

    NONE = "none"
    ZERO = "zero"
