"""``IndexedSlices``: a sparse gradient, some rows of a dense tensor (TF 1.x's class).

``tf.gather(params, indices)`` reads a few rows of ``params``; its gradient touches only
those rows, so TF returns it as three tensors instead of a dense tensor of ``params``'s
shape: ``values`` (the rows' gradients, shape ``[n] + params.shape[1:]``), ``indices``
(which row each one belongs to, shape ``[n]``, repeats allowed: they add up) and
``dense_shape`` (the shape of the dense tensor they stand for, or None). An optimizer applies
it with a sparse update that touches only those rows.

Converting one to a tensor (``tf.convert_to_tensor``, or passing it to any op) sums the rows
into a dense tensor (``UnsortedSegmentSum``); ``tfteach.ops.gather_ops`` registers that
conversion, as this layer cannot create ops. ``Session.run`` of an IndexedSlices fetches
its three tensors and returns an ``IndexedSlicesValue`` of NumPy arrays.
"""
from __future__ import annotations

import collections
from typing import Any

from tfteach.errors import with_hint
from tfteach.i18n import tr

from tfteach.framework.graph import Graph, Operation, Tensor
from tfteach.framework.tensor_shape import TensorShape, unknown_shape

IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])
IndexedSlicesValue.__doc__ = "What Session.run gives for an IndexedSlices: three arrays."


class IndexedSlices:
    """``tf.IndexedSlices(values, indices, dense_shape=None)``: rows of a dense tensor."""

    def __init__(self, values: Tensor, indices: Tensor, dense_shape: Tensor | None = None) -> None:
        for what, t in (("values", values), ("indices", indices), ("dense_shape", dense_shape)):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(with_hint(
                    f"IndexedSlices {what} must be a Tensor, got {t!r}.",
                    tr("build them with tf.constant or other ops first.")))
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)

    @property
    def name(self) -> str:
        return self._values.name

    @property
    def device(self) -> str:
        return self._values.device

    @property
    def op(self) -> Operation:
        return self._values.op

    @property
    def dtype(self) -> Any:
        return self._values.dtype

    @property
    def graph(self) -> Graph:
        return self._values.graph

    @property
    def shape(self) -> TensorShape:
        """The dense tensor's static shape, known when ``dense_shape`` is a constant."""
        ds = self._dense_shape
        if ds is None:
            return unknown_shape()
        if ds.op.type == "Const":
            return TensorShape([int(d) for d in ds.op.attrs["value"]])
        n = ds.shape.dims[0] if ds.shape.dims else None
        return unknown_shape(n)

    def get_shape(self) -> TensorShape:
        return self.shape

    def consumers(self) -> list[Operation]:
        seen = {}
        for t in (self._values, self._indices, self._dense_shape):
            if t is not None:
                seen.update(dict.fromkeys(t.consumers()))
        return list(seen)

    def __neg__(self) -> IndexedSlices:
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def __str__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    __repr__ = __str__
