"""``tf.compat``: ``tf.compat.v1`` is tfteach itself (its API is TF 1.x's), and the helpers TF
1.x code uses to read static dimensions whether they are ``Dimension`` objects or ints."""
from __future__ import annotations

import tfteach as v1
from tfteach.framework.tensor_shape import dimension_at_index, dimension_value

__all__ = ["dimension_at_index", "dimension_value", "v1"]
