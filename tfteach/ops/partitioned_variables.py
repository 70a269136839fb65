"""Partitioned variables: one large variable stored as several parts along one axis (TF 1.x).

``get_variable(name, shape, partitioner=p)`` asks ``p(shape=..., dtype=...)`` how many parts
each axis gets (at most one axis more than one), and creates one variable per part, named
``name/part_0``, ``name/part_1``, ... in offset order; the first ``size % n`` parts are one
row larger. Each part is an ordinary ``VariableV2``, so ``replica_device_setter`` spreads
the parts over the ps tasks round-robin, and each carries a ``SaveSliceInfo`` (the full
name and shape, its offset and shape) from which ``Saver`` writes it as a slice of the full
tensor, as TF does. The ``PartitionedVariable`` that ``get_variable`` returns iterates over
the parts and converts to one tensor (``as_tensor``: a ``concat`` of the parts, then an
``Identity`` named after the variable), so ``matmul`` and ``embedding_lookup`` take it.

The partitioners are TF's: ``fixed_size_partitioner`` (n parts), ``min_max_variable_partitioner``
(parts of at least ``min_slice_size`` bytes, at most ``max_partitions``) and
``variable_axis_size_partitioner`` (parts of at most ``max_shard_bytes``).

State: the graph's variable store (``variable_scope._VariableStore``) keeps the
PartitionedVariables by full name in ``partitioned``, next to the parts in ``vars``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.tensor_shape import TensorShape, as_shape
from tfteach.i18n import tr
from tfteach.ops import array_ops, init_ops
from tfteach.ops.common import convert_to_tensor, register_tensor_conversion
from tfteach.ops.state_ops import Variable

Partitioner = Callable[..., list]


# ---- the partitioners ------------------------------------------------------------------------
def fixed_size_partitioner(num_shards: int, axis: int = 0) -> Partitioner:
    """Split axis ``axis`` into ``num_shards`` parts (fewer when the axis is shorter)."""
    def _partitioner(shape: TensorShape, **unused_args: Any) -> list[int]:
        partitions = [1] * shape.ndims
        partitions[axis] = min(num_shards, shape.dims[axis])
        return partitions
    return _partitioner


def _element_size(dtype: Any, bytes_per_string_element: int) -> int:
    dtype = dtypes.as_dtype(dtype)
    return bytes_per_string_element if dtype is dtypes.string else dtype.size


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16,
                                   max_shards: int | None = None) -> Partitioner:
    """Parts along ``axis`` of at most ``max_shard_bytes`` each (at least one slice each)."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive. "
                         f"Currently, max_shard_bytes is {max_shard_bytes} and"
                         f"bytes_per_string_element is {bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape: Any, dtype: Any) -> list[int]:
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        if not isinstance(dtype, dtypes.DType):
            raise ValueError(f"dtype is not a DType: {dtype}")
        partitions = [1] * shape.ndims
        bytes_per_slice = 1.0 * (shape.num_elements() / shape.dims[axis]) * \
            _element_size(dtype, bytes_per_string_element)
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * shape.dims[axis] / slices_per_shard))
        partitions[axis] = min(max_shards, axis_shards) if max_shards else axis_shards
        return partitions
    return _partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Partitioner:
    """As many parts along ``axis`` as slices of ``min_slice_size`` bytes fill, at most
    ``max_partitions`` (and at most the axis' length)."""
    def _partitioner(shape: Any, dtype: Any) -> list[int]:
        shape = as_shape(shape)
        if axis >= shape.ndims:
            raise ValueError(f"Cannot partition variable along axis: {axis} when shape is: "
                             f"{shape}")
        total_bytes = shape.num_elements() * _element_size(dtype, bytes_per_string_element)
        partitions = [1] * shape.ndims
        partitions[axis] = max(1, min(shape.dims[axis], max_partitions,
                                      int(math.ceil(total_bytes / min_slice_size))))
        return partitions
    return _partitioner


# ---- what a part knows of the whole ------------------------------------------------------------
class PartitionInfo(NamedTuple):
    """What an initializer learns about the part it fills (TF's ``_PartitionInfo``)."""
    full_shape: list
    var_offset: list


class SaveSliceInfo(NamedTuple):
    """Where a part lies in the full variable (TF's ``Variable.SaveSliceInfo``)."""
    full_name: str
    full_shape: list
    var_offset: list
    var_shape: list

    @property
    def spec(self) -> str:
        """TF's slice spec: ``"130 3 0,44:0,3"`` (full shape, then offset,length per axis)."""
        full = " ".join(str(d) for d in self.full_shape) + " "
        return full + ":".join(f"{o},{s}" for o, s in zip(self.var_offset, self.var_shape,
                                                                      strict=True))


def save_slice_info(v: Any) -> SaveSliceInfo | None:
    """The part's SaveSliceInfo, or None for a whole variable."""
    return getattr(v, "_save_slice_info", None)


def call_partitioner(partitioner: Partitioner, shape: TensorShape, dtype: Any) -> list[int]:
    """The partitioner's answer for ``shape``, checked as TF checks it."""
    if not shape.is_fully_defined():
        raise ValueError(with_hint(
            f"Shape of a new partitioned variable must be fully defined, but instead was "
            f"{shape}.", tr("pass shape=[...] with every dimension known.")))
    if shape.ndims < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1, shape: {shape}")
    slicing = partitioner(shape=shape, dtype=dtype)
    if not isinstance(slicing, Sequence):
        raise ValueError(f"Partitioner must return a sequence, but saw: {slicing}")
    if len(slicing) != shape.ndims:
        raise ValueError("Partitioner returned a partition list that does not match the "
                         f"Variable's rank: {slicing} vs. {shape}")
    if any(p < 1 for p in slicing):
        raise ValueError(f"Partitioner returned zero partitions for some axes: {slicing}")
    if sum(p > 1 for p in slicing) > 1:
        raise ValueError(with_hint(
            f"Can only slice a variable along one dimension: shape: {shape}, partitioning: "
            f"{slicing}", tr("a partitioner splits one axis; give every other axis 1 part.")))
    return list(slicing)


def iter_slices(full_shape: list, partitions: list) -> Iterator[tuple[list, list]]:
    """(offset, shape) of each part; the first ``size % n`` parts are one larger."""
    axis = next((i for i, p in enumerate(partitions) if p > 1), 0)
    n = partitions[axis]
    smallest, excess = divmod(full_shape[axis], n)
    offset = [0] * len(full_shape)
    for i in range(n):
        shape = list(full_shape)
        shape[axis] = smallest + (i < excess)
        yield list(offset), shape
        offset[axis] += shape[axis]


# ---- the PartitionedVariable ---------------------------------------------------------------------
class PartitionedVariable:
    """A variable stored as parts (TF 1.x ``PartitionedVariable``): iterate for the parts."""

    def __init__(self, name: str, shape: Any, dtype: Any, variable_list: list,
                 partitions: list) -> None:
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        self._variable_list = sorted(variable_list, key=lambda v: save_slice_info(v).var_offset)
        self._name = name
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._partitions = list(partitions)

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)
    shape = property(lambda self: self._shape)
    graph = property(lambda self: self._variable_list[0].graph)

    def get_shape(self) -> TensorShape:
        return self._shape

    def __iter__(self) -> Iterator[Variable]:
        return iter(self._variable_list)

    def __len__(self) -> int:
        return len(self._variable_list)

    def _get_variable_list(self) -> list:
        return self._variable_list

    def _get_partitions(self) -> list:
        return self._partitions

    def _partition_axes(self) -> list[int]:
        axes = [i for i, p in enumerate(self._partitions) if p > 1]
        return axes or [0]

    def as_tensor(self) -> Tensor:
        """The whole value: the parts concatenated (new ops on every call, as in TF)."""
        g = self.graph
        with g.as_default(), g.control_dependencies(None):
            if len(self._variable_list) == 1:
                with g.name_scope(None):
                    return array_ops.identity(self._variable_list[0], name=self._name)
            with g.name_scope(self._name + "/ConcatPartitions/"):
                whole = array_ops.concat(list(self._variable_list), self._partition_axes()[0])
            with g.name_scope(None):
                return array_ops.identity(whole, name=self._name)

    def _apply(self, method: str, value: Any, use_locking: bool, name: str | None) -> list:
        if isinstance(value, (list, PartitionedVariable)):
            values = list(value)
        else:     # each part's slice of the whole value (TF splits it; same values)
            value = convert_to_tensor(value, dtype=self._dtype)
            values = [array_ops.slice_(value, save_slice_info(v).var_offset,
                                       save_slice_info(v).var_shape)
                      for v in self._variable_list]
        return [getattr(v, method)(x, use_locking=use_locking, name=name)
                for v, x in zip(self._variable_list, values, strict=True)]

    def assign(self, value: Any, use_locking: bool = False, name: str | None = None,
               read_value: bool = True) -> list:
        """Assign each part its slice of ``value`` (a list of one value per part also does)."""
        out = self._apply("assign", value, use_locking, name)
        return out if read_value else [t.op for t in out]

    def assign_add(self, value: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> list:
        out = self._apply("assign_add", value, use_locking, name)
        return out if read_value else [t.op for t in out]

    def assign_sub(self, value: Any, use_locking: bool = False, name: str | None = None,
                   read_value: bool = True) -> list:
        out = self._apply("assign_sub", value, use_locking, name)
        return out if read_value else [t.op for t in out]

    def __repr__(self) -> str:
        return (f"<tf.PartitionedVariable '{self._name}' shape={self._shape} "
                f"dtype={self._dtype.name} parts={len(self._variable_list)}>")


def _to_tensor(v: PartitionedVariable, dtype: Any) -> Tensor:
    if dtype is not None and dtypes.as_dtype(dtype) is not v.dtype:
        raise ValueError(f"Incompatible type conversion requested to type "
                         f"'{dtypes.as_dtype(dtype).name}' for variable of type '{v.dtype.name}'")
    return v.as_tensor()


register_tensor_conversion(PartitionedVariable, _to_tensor)


# ---- get_variable(..., partitioner=...) ------------------------------------------------------
def _part_initializer(initializer: Any, dtype: dtypes.DType, info: PartitionInfo,
                      part_shape: list) -> tuple[Any, Any]:
    """(initializer, shape) for one part: a callable gets the part's shape and its
    PartitionInfo; a value or tensor is sliced."""
    if callable(initializer):
        def init(shape: Any, dtype: Any = dtype, partition_info: Any = None) -> Tensor:
            chosen = initializer(dtype=dtype) if isinstance(initializer, type) else initializer
            return chosen(shape, dtype=dtype, partition_info=info)
        return init, part_shape
    value = initializer if isinstance(initializer, Tensor) else \
        convert_to_tensor(initializer, dtype=dtype)
    return array_ops.slice_(value, info.var_offset, part_shape), None


def get_partitioned_variable(store: Any, name: str, shape: Any, dtype: dtypes.DType,
                             initializer: Any, partitioner: Partitioner, reuse: tuple[bool, bool],
                             make_part: Callable[..., Variable]) -> PartitionedVariable:
    """``get_variable`` with a partitioner: the stored PartitionedVariable ``name``, or a
    new one whose parts ``make_part(part_name, shape, initializer)`` creates. ``reuse`` is
    (may reuse, must reuse), from the variable scope."""
    if name in store.vars:
        raise ValueError(f"A partitioner was provided, but an unpartitioned version of the "
                         f"variable was found: {name}.  Perhaps a variable of the same name "
                         "was already created without partitioning?")
    shape = as_shape(shape)
    if isinstance(initializer, Tensor):
        shape = shape.merge_with(initializer.shape)
    partitions = call_partitioner(partitioner, shape, dtype)
    may_reuse, must_reuse = reuse
    if name in store.partitioned:
        return _reused(store.partitioned[name], name, shape, dtype, partitions, may_reuse)
    if must_reuse:
        raise ValueError(f"PartitionedVariable {name} does not exist, or was not created with "
                         "tf.get_variable(). Did you mean to set reuse=False or "
                         "reuse=tf.AUTO_REUSE in VarScope?")
    if initializer is None:
        initializer = init_ops.GlorotUniform() if dtype.is_floating else init_ops.Zeros()
    parts = []
    for i, (offset, part_shape) in enumerate(iter_slices(shape.as_list(), partitions)):
        info = PartitionInfo(shape.as_list(), offset)
        init, init_shape = _part_initializer(initializer, dtype, info, part_shape)
        part = make_part(f"{name}/part_{i}", init_shape, init)
        part._save_slice_info = SaveSliceInfo(name, shape.as_list(), offset, part_shape)
        parts.append(part)
    store.partitioned[name] = PartitionedVariable(name, shape, dtype, parts, partitions)
    return store.partitioned[name]


def _reused(found: PartitionedVariable, name: str, shape: TensorShape, dtype: dtypes.DType,
            partitions: list, may_reuse: bool) -> PartitionedVariable:
    if not may_reuse:
        raise ValueError(with_hint(
            f"Partitioned variable with name {name} already exists. Did you mean to set "
            "reuse=True or reuse=tf.AUTO_REUSE in VarScope?",
            tr("to share it, open the scope again with reuse=True (or call "
               "scope.reuse_variables()).")))
    if not shape.is_compatible_with(found.get_shape()):
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified shape "
                         f"{shape} and found shape {found.get_shape()}.")
    if dtype is not found.dtype:
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified dtype "
                         f"{dtype.name} and found dtype {found.dtype.name}.")
    if found._get_partitions() != partitions:
        raise ValueError(f"Trying to reuse partitioned variable {name}, but specified "
                         f"partitions {partitions} and found partitions "
                         f"{found._get_partitions()}.")
    return found
