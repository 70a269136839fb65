"""What ``tf.layers`` and the RNN cells share: the ``Layer`` base (a variable scope opened
on the first call and reused on later ones, as TF's ``base_layer`` does), the argument
helpers of TF's layers (pairs, data formats, the channel count, refused options) and
``outside_control_flow`` (where a variable made in a loop's body is built).

State per layer: its ``VariableScope``, fixed by its first call.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from tfteach.errors import with_hint
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.i18n import tr
from tfteach.ops.variable_scope import VariableScope, variable_scope

__all__ = ["Layer", "pair", "refuse_unsupported", "data_format", "channels",
           "outside_control_flow"]


@contextlib.contextmanager
def outside_control_flow() -> Iterator[None]:
    """Build outside any cond or while loop and its control dependencies, as TF builds a
    variable that a layer makes in a loop's body (its ``init_scope``)."""
    g = get_default_graph()
    old, g._flow_context = g._flow_context, None
    try:
        with g.control_dependencies(None):
            yield
    finally:
        g._flow_context = old


class Layer:
    """What every layer shares: its variable scope, opened on the first call and reused."""

    _default_name = "layer"
    name: str | None = None
    _reuse: Any = None
    _scope: VariableScope | None = None

    @contextlib.contextmanager
    def _open_scope(self) -> Iterator[VariableScope]:
        """First call: a new scope. Later calls: the same scope and name scope, reusing."""
        if self._scope is None:
            with variable_scope(self.name, default_name=self._default_name,
                                reuse=self._reuse) as scope:
                self._scope = scope
                yield scope
            return
        g = get_default_graph()
        with variable_scope(self._scope, reuse=True, auxiliary_name_scope=False) as scope, \
                g.name_scope(self._scope.original_name_scope):
            yield scope


def pair(value: Any) -> tuple[int, int]:
    return (int(value), int(value)) if isinstance(value, int) else tuple(int(v) for v in value)


def refuse_unsupported(layer: str, **options: Any) -> None:
    """Options of TF's layer that tfteach does not implement: refused, never ignored."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise NotImplementedError(with_hint(
            f"tfteach's {layer} does not support {', '.join(given)} yet.",
            tr("leave it out, or run this program on real TensorFlow.")))


def data_format(value: str) -> str:
    """A layer's ``channels_last`` / ``channels_first`` as an op's NHWC / NCHW."""
    if value not in ("channels_last", "channels_first"):
        raise ValueError('The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value}')
    return "NCHW" if value == "channels_first" else "NHWC"


def channels(x: Tensor, fmt: str) -> int:
    dims = x.shape.dims
    if dims is None or len(dims) != 4:
        raise ValueError(f"Input 0 of layer is incompatible with the layer: expected ndim=4, "
                         f"found ndim={x.shape.ndims}. Full shape received: {x.shape}")
    depth = dims[1] if fmt == "NCHW" else dims[3]
    if depth is None:
        raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
    return depth
