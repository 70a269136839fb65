"""Static shapes with unknown dimensions, as ``tf.TensorShape`` and ``tf.Dimension``.

A ``TensorShape`` is either of unknown rank (``dims is None``) or a tuple of dimensions, each
an int or ``None`` (unknown). Shapes print as TF prints them: ``(?, 784)`` and
``<unknown>``; error messages use the bracket form ``[?,784]``.

What a learner reads is TF 1.x's: ``shape[i]`` and iterating a shape give ``Dimension``
objects (``shape[1].value``, ``Dimension(None) * 2``), ``repr`` names them. Code inside
tfteach reads the raw sizes instead: ``shape.dims`` (ints and ``None``) or ``as_list()``.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Iterable, Iterator, Sequence


class Dimension:
    """One static dimension as TF 1.x has it: ``value`` is an int >= 0, or None (unknown).

    Arithmetic (``+ - * // %``) with ints or Dimensions gives a Dimension, unknown when
    either side is; ``==``, ``!=``, ``<`` ... give None when either side is unknown. Like
    TF's, a Dimension is not hashable and ``/`` asks for ``//``.
    """

    __slots__ = ("_value",)

    def __init__(self, value: Any) -> None:
        if isinstance(value, Dimension):
            value = value.value
        elif value is not None and not isinstance(value, int):
            try:
                value = operator.index(value)
            except TypeError:
                raise TypeError("Dimension value must be integer or None or have an __index__ "
                                f"method, got value '{value!r}' with type '{type(value)!r}'"
                                ) from None
        if value is not None and value < 0:
            raise ValueError(f"Dimension {value} must be >= 0")
        self._value = value

    @property
    def value(self) -> int | None:
        """The size, or None when it is unknown."""
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value!r})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __int__(self) -> int:
        return self._value  # type: ignore[return-value]  # None: TypeError, as TF's

    __index__ = __int__
    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return Dimension, (self._value,)

    def is_compatible_with(self, other: Any) -> bool:
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {as_dimension(other)} are not compatible")

    def merge_with(self, other: Any) -> "Dimension":
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(other.value if self._value is None else self._value)

    def __truediv__(self, other: Any):
        raise TypeError("unsupported operand type(s) for /: 'Dimension' and "
                        f"'{type(other).__name__}', please use // instead")

    def __rtruediv__(self, other: Any):
        raise TypeError(f"unsupported operand type(s) for /: '{type(other).__name__}' and "
                        "'Dimension', please use // instead")


def _known(a: int | None, b: int | None, fn: Callable[[int, int], Any]) -> Any:
    return None if a is None or b is None else fn(a, b)


def _arithmetic(fn: Callable[[int, int], int], reflected: bool = False):
    def method(self: Dimension, other: Any):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        a, b = (other.value, self.value) if reflected else (self.value, other.value)
        return Dimension(_known(a, b, fn))
    return method


def _comparison(fn: Callable[[int, int], bool], strict: bool = True):
    def method(self: Dimension, other: Any):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            if strict:
                raise
            return NotImplemented
        return _known(self.value, other.value, fn)
    return method


for _name, _fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("floordiv", operator.floordiv), ("mod", operator.mod)):
    setattr(Dimension, f"__{_name}__", _arithmetic(_fn))
    setattr(Dimension, f"__r{_name}__", _arithmetic(_fn, reflected=True))
for _name, _fn in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge)):
    setattr(Dimension, f"__{_name}__", _comparison(_fn))
Dimension.__eq__ = _comparison(operator.eq, strict=False)  # type: ignore[method-assign]
Dimension.__ne__ = _comparison(operator.ne, strict=False)  # type: ignore[method-assign]


def as_dimension(value: Any) -> Dimension:
    """``value`` as a Dimension (a Dimension is returned as it is)."""
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension: Any) -> int | None:
    """``tf.compat.dimension_value``: the int (or None) of a Dimension, an int or None."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """``tf.compat.dimension_at_index``: dimension ``index`` of ``shape``, unknown when the
    rank is."""
    shape = as_shape(shape)
    return Dimension(None) if shape.dims is None else Dimension(shape.dims[index])


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

    def concatenate(self, other: Any) -> "TensorShape":
        """The dimensions of ``self`` then those of ``other`` (also ``shape + [10]``)."""
        other = as_shape(other)
        if self.dims is None or other.dims is None:
            return TensorShape(None)
        return TensorShape(self.dims + other.dims)

    def __add__(self, other: Any) -> "TensorShape":
        return self.concatenate(other)

    def __radd__(self, other: Any) -> "TensorShape":
        return as_shape(other).concatenate(self)

    def with_rank(self, rank: int) -> "TensorShape":
        """This shape, with its rank set to ``rank`` when unknown (ValueError if another)."""
        try:
            return self.merge_with(unknown_shape(rank))
        except ValueError:
            raise ValueError(f"Shape {self} must have rank {rank}") from None

    def with_rank_at_least(self, rank: int) -> "TensorShape":
        if self.ndims is not None and self.ndims < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> "TensorShape":
        if self.ndims is not None and self.ndims > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def assert_has_rank(self, rank: int) -> None:
        if self.ndims not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other: Any) -> None:
        other = as_shape(other)
        if self.ndims is not None and other.ndims is not None and self.ndims != other.ndims:
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are incompatible")

    def assert_is_fully_defined(self) -> None:
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def __iter__(self) -> Iterator[Dimension]:
        if self.dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter([Dimension(d) for d in self.dims])

    def __len__(self) -> int:
        if self.dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self.dims)

    def __getitem__(self, key):
        """A Dimension (``shape[1].value``), or a TensorShape for a slice (``shape[1:]``)."""
        if self.dims is None:
            return _unknown_slice(key) if isinstance(key, slice) else Dimension(None)
        if isinstance(key, slice):
            return TensorShape(self.dims[key])
        return Dimension(self.dims[key])

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
        if self.dims is None:
            return "TensorShape(None)"
        return f"TensorShape({[Dimension(d) for d in self.dims]})"

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


def _unknown_slice(key: slice) -> TensorShape:
    """A slice of a shape of unknown rank: of known rank only for ``[a:b]`` with
    ``0 <= a <= b``, as TF's."""
    if key.step is not None:
        raise ValueError("Steps are not yet handled")
    start = 0 if key.start is None else key.start
    if key.stop is None or start < 0 or key.stop < 0:
        return TensorShape(None)
    return unknown_shape(key.stop - start)


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
