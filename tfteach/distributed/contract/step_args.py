"""A step's feeds, fetches and targets as a task receives them: checked on the server.

A RunStep or RunGraph request may come from any client, not only tfteach's (which converts
feeds before sending them). Names resolve in the session's (or partition's) graph with
TF's C++ messages for missing ones (NotFoundError); a fed value must have the fed tensor's
exact dtype (no silent conversion) and a shape compatible with its static shape
(InvalidArgumentError naming the tensor, its dtype and shape, and what was given).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from tfteach import errors
from tfteach.framework.graph import Graph, Operation, Tensor
from tfteach.i18n import tr


def tensor(graph: Graph, name: str, missing: str) -> Tensor:
    """The tensor ``name`` of ``graph``; NotFoundError with TF's ``missing`` text if none."""
    try:
        return graph.get_tensor_by_name(name)
    except (KeyError, ValueError, TypeError):
        raise errors.NotFoundError(
            missing.format(name=name),
            hint=tr("'{name}' names no tensor of the graph: a tensor name is "
                    "'<op name>:<output index>' (e.g. 'x:0'), of an op of this session's "
                    "graph.", name=name)) from None


def fetches(graph: Graph, names: Sequence[str]) -> list[Tensor]:
    return [tensor(graph, n, "FetchOutputs node {name}: not found") for n in names]


def targets(graph: Graph, names: Sequence[str]) -> list[Operation]:
    """The target ops ``names``; NotFoundError naming those that are not in ``graph``."""
    missing = [n for n in names if not _is_op(graph, n)]
    if missing:
        raise errors.NotFoundError(
            f"PruneForTargets: Some target nodes not found: {', '.join(missing)}",
            hint=tr("a target is the name of an op of this session's graph (no ':0')."))
    return [graph.get_operation_by_name(n) for n in names]


def _is_op(graph: Graph, name: str) -> bool:
    try:
        graph.get_operation_by_name(name)
    except (KeyError, ValueError, TypeError):
        return False
    return True


def feeds(graph: Graph, values: Mapping[str, Any]) -> dict[Tensor, np.ndarray]:
    """``{tensor: value}`` for the fed ``values``, each checked against its tensor."""
    out = {}
    for index, (name, value) in enumerate(values.items()):
        t = tensor(graph, name, "FeedInputs: unable to find feed output {name}")
        out[t] = checked_value(t, np.asarray(value), index)
    return out


def checked_value(t: Tensor, value: np.ndarray, index: int) -> np.ndarray:
    """``value`` if it may be fed to ``t``: its dtype, a compatible shape."""
    dtype = t.dtype.base_dtype
    given = value.dtype
    same = given.kind in "OSU" if dtype.np.kind == "O" else given == dtype.np
    if not same:
        raise errors.InvalidArgumentError(
            f"Expects arg[{index}] to be {dtype.tf_name} but {_tf_name(given)} is provided: "
            f"the value fed to {_what(t)}",
            hint=tr("feed a value of dtype {dtype} (e.g. np.asarray(value, "
                    "dtype=np.{np_dtype})): the server converts nothing.", dtype=dtype.name,
                    np_dtype=dtype.np.name))
    dims = t.shape.dims
    if dims is not None and (len(dims) != value.ndim or any(
            d is not None and d != n for d, n in zip(dims, value.shape, strict=True))):
        raise errors.InvalidArgumentError(
            f"Cannot feed value of shape {value.shape} for Tensor '{t.name}', which has "
            f"shape '{t.shape}': the value fed to {_what(t)}",
            hint=tr("reshape the value to {shape} (? means any size).",
                    shape=t.shape.bracket()))
    return value


def _what(t: Tensor) -> str:
    """The fed tensor, as the errors name it (built only for an error: steps feed often)."""
    return (f"tensor '{t.name}' (of {t.op.type} '{t.op.name}', with dtype "
            f"{t.dtype.base_dtype.tf_name} and shape {t.shape.bracket()})")


def _tf_name(dtype: np.dtype) -> str:
    """TF's name for a NumPy dtype (``double`` for float64), or NumPy's."""
    from tfteach.framework import dtypes
    try:
        return dtypes.as_dtype(dtype).tf_name
    except (TypeError, ValueError):
        return dtype.name
