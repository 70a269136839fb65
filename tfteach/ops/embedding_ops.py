"""``tf.nn.embedding_lookup``: rows of one embedding table, or of a table split in parts.

A ``PartitionedVariable`` is its list of parts, as in TF. One table: a ``GatherV2`` named ``embedding_lookup`` beside the table, then an Identity (as
TF builds it). A list of tables is one table split by rows across them (often one part per
parameter server): with ``partition_strategy='mod'`` id ``i`` lives in part ``i % n`` at
row ``i // n``; with ``'div'`` the parts hold consecutive ranges (the first
``total % n`` parts one row more). The ids are split by part (``DynamicPartition``), each
part's rows are gathered beside that part, and ``ParallelDynamicStitch`` puts the rows back
in the order of the ids. Either way the gradient of each table is an ``IndexedSlices``.
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor
from tfteach.framework.tensor_shape import TensorShape
from tfteach.ops import array_ops, math_ops, mod_ops
from tfteach.ops.common import convert_to_tensor, graph_of
from tfteach.ops.data_flow_ops import dynamic_partition
from tfteach.ops.gather_ops import gather, parallel_dynamic_stitch
from tfteach.ops.partitioned_variables import PartitionedVariable


def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod",
                     name: str | None = None, validate_indices: bool = True,
                     max_norm: Any = None) -> Tensor:
    """The rows ``ids`` of ``params`` (one tensor/variable, or a list of row-wise parts)."""
    parts = list(params) if isinstance(params, (list, tuple, PartitionedVariable)) \
        else [params]
    if not parts:
        raise ValueError("Need at least one param")
    if max_norm is not None:
        raise NotImplementedError("tfteach's embedding_lookup does not clip (max_norm=None).")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}")
    g = graph_of(parts + [ids])
    with g.as_default(), g.name_scope(name or "embedding_lookup") as scope:
        tables = [convert_to_tensor(p, name="params") for p in parts]
        ids_t = convert_to_tensor(ids, name="ids")
        if len(tables) == 1:
            with g.colocate_with(tables[0].op):
                result = gather(tables[0], ids_t, name=scope)
            return array_ops.identity(result)
        return _partitioned_lookup(tables, ids_t, partition_strategy, scope)


def _partitioned_lookup(tables: list[Tensor], ids: Tensor, strategy: str, scope: str) -> Tensor:
    g = ids.graph
    n = len(tables)
    flat_ids = array_ops.reshape(ids, [-1])
    original_indices = array_ops.range_(array_ops.size(flat_ids))
    if strategy == "mod":
        assignments, new_ids = mod_ops.floormod(flat_ids, n), mod_ops.floordiv(flat_ids, n)
    else:
        assignments, new_ids = _div_assignments(tables, flat_ids)
    assignments = array_ops.cast(assignments, dtypes.int32)
    gather_ids = dynamic_partition(new_ids, assignments, n)
    positions = dynamic_partition(original_indices, assignments, n)
    rows = []
    for table, part_ids in zip(tables, gather_ids, strict=True):
        with g.device(None), g.colocate_with(table.op):
            rows.append(gather(table, part_ids))
    stitched = parallel_dynamic_stitch(positions, rows, name=scope)
    element = TensorShape(tables[0].shape.dims[1:]) if tables[0].shape.dims is not None \
        else TensorShape(None)
    for table in tables[1:]:
        if table.shape.dims is not None:
            element = element.merge_with(TensorShape(table.shape.dims[1:]))
    if element.is_fully_defined():
        tail = array_ops.constant(element.as_list(), dtype=dtypes.int32)
    else:
        with g.colocate_with(tables[0].op):
            tail = array_ops.slice_(array_ops.shape(tables[0]), [1], [-1])
    out = array_ops.reshape(stitched, array_ops.concat([array_ops.shape(ids), tail], 0))
    if ids.shape.dims is not None and element.dims is not None:
        out.set_shape(TensorShape(ids.shape.dims + element.dims))
    return out


def _div_assignments(tables: list[Tensor], flat_ids: Tensor) -> tuple[Tensor, Tensor]:
    """'div': consecutive ranges of ids per part, the first ``total % n`` one id larger."""
    sizes = [t.shape.dims[0] if t.shape.dims else None for t in tables]
    if any(s is None for s in sizes):
        raise NotImplementedError("tfteach's partition_strategy='div' needs tables whose "
                                  "number of rows is known when the graph is built.")
    n, total = len(tables), sum(sizes)
    per, extras = total // n, total % n
    assignments = math_ops.maximum(mod_ops.floordiv(flat_ids, per + 1),
                                   mod_ops.floordiv(flat_ids - extras, per))
    new_ids = math_ops.select(math_ops.less(assignments, extras),
                              mod_ops.floormod(flat_ids, per + 1),
                              mod_ops.floormod(flat_ids - extras, per))
    return assignments, new_ids
