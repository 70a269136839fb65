"""Static shapes with unknown dimensions, as ``tf.TensorShape``.

A ``TensorShape`` is either of unknown rank (``dims is None``) or a tuple of dimensions, each
an int or ``None`` (unknown). Shapes print as TF prints them: ``(?, 784)`` and
``<unknown>``; error messages use the bracket form ``[?,784]``.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence


class TensorShape:
    """A possibly partial static shape."""

    __slots__ = ("dims",)

    def __init__(self, dims: Any = None) -> None:
        if isinstance(dims, TensorShape):
            dims = dims.dims
        elif dims is not None and not isinstance(dims, (list, tuple)):
            dims = [dims]
        self.dims = None if dims is None else tuple(_dim(d) for d in dims)

    @property
    def ndims(self) -> int | None:
        return None if self.dims is None else len(self.dims)

    rank = ndims

    def is_fully_defined(self) -> bool:
        return self.dims is not None and all(d is not None for d in self.dims)

    def as_list(self) -> list:
        if self.dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self.dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self.dims:
            n *= d
        return n

    def is_compatible_with(self, other: Any) -> bool:
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return True
        if len(self.dims) != len(other.dims):
            return False
        return all(a is None or b is None or a == b
                   for a, b in zip(self.dims, other.dims, strict=True))

    def merge_with(self, other: Any) -> "TensorShape":
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        if self.dims is None:
            return other
        if other.dims is None:
            return self
        return TensorShape([a if a is not None else b
                            for a, b in zip(self.dims, other.dims, strict=True)])

    def __iter__(self):
        if self.dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self.dims)

    def __len__(self) -> int:
        if self.dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self.dims)

    def __getitem__(self, key):
        if self.dims is None:
            return None if not isinstance(key, slice) else TensorShape(None)
        if isinstance(key, slice):
            return TensorShape(self.dims[key])
        return self.dims[key]

    def __eq__(self, other: Any) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self.dims == other.dims

    def __hash__(self) -> int:
        return hash(self.dims)

    def __str__(self) -> str:
        if self.dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self.dims)
        return f"({inner},)" if len(self.dims) == 1 else f"({inner})"

    def __repr__(self) -> str:
        return f"TensorShape({list(self.dims) if self.dims is not None else None})"

    def bracket(self) -> str:
        """TF's error-message form: ``[?,784]`` (``<unknown>`` for unknown rank)."""
        if self.dims is None:
            return "<unknown>"
        return "[" + ",".join("?" if d is None else str(d) for d in self.dims) + "]"


def _dim(d: Any) -> int | None:
    if d is None:
        return None
    if hasattr(d, "value"):
        return d.value
    d = int(d)
    if d < -1:
        raise ValueError(f"Dimension {d} must be >= 0")
    return None if d == -1 else d


def as_shape(value: Any) -> TensorShape:
    return value if isinstance(value, TensorShape) else TensorShape(value)


def unknown_shape(rank: int | None = None) -> TensorShape:
    return TensorShape(None if rank is None else [None] * rank)


def broadcast_shapes(a: TensorShape, b: TensorShape) -> TensorShape | None:
    """NumPy broadcasting on static shapes; ``None`` when the shapes cannot broadcast."""
    if a.dims is None or b.dims is None:
        return TensorShape(None)
    out = []
    for x, y in zip(_pad(a.dims, len(b.dims)), _pad(b.dims, len(a.dims)), strict=True):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            return None
    return TensorShape(out)


def _pad(dims: Sequence, n: int) -> Iterable:
    return (1,) * (n - len(dims)) + tuple(dims)
