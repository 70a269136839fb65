"""``tf.data.Dataset.from_generator``: elements from a Python generator (GeneratorDataset).

The generator function (and its ``args``, tensors evaluated when the dataset op runs) stays in
the Python process that built the graph: it lives in the graph's ``GENERATORS`` collection and
the op names it in the attr ``generator``, so, as with TF's ``py_func``, a task that imported
the graph cannot call it (UnimplementedError). Each yielded element is converted to the
declared dtypes and checked against the declared shapes, with TF's messages.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Graph
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.dataset_functions import flatten

GENERATORS = "_dataset_generators"


class _Generated:
    def __init__(self, fn: Callable, args: list, types: list, shapes: list, op: Any) -> None:
        self.fn, self.args, self.types, self.shapes, self.op = fn, args, types, shapes, op

    def elements(self, env: Any) -> Iterator[tuple]:
        for item in self.fn(*self.args):
            parts = flatten(item) if len(self.types) > 1 else [item]
            if len(parts) != len(self.types):
                raise errors.InvalidArgumentError(
                    f"`generator` yielded an element of {len(parts)} components where "
                    f"{len(self.types)} were expected.", op=self.op,
                    hint=tr("yield one value per entry of output_types (a tuple for "
                            "several)."))
            yield tuple(self._convert(p, dt, s) for p, dt, s in
                        zip(parts, self.types, self.shapes, strict=True))

    def _convert(self, value: Any, dtype: Any, shape: TensorShape) -> np.ndarray:
        try:
            arr = dtypes.to_numpy(value, dtype) if dtype is dtypes.string else \
                np.asarray(value).astype(dtype.np, casting="same_kind")
        except (TypeError, ValueError):
            raise errors.InvalidArgumentError(
                "TypeError: `generator` yielded an element that could not be converted to the "
                f"expected type. The expected type was {dtype.name}, but the yielded element "
                f"was {value!r}.", op=self.op,
                hint=tr("yield values of the dtypes given in output_types.")) from None
        if not shape.is_compatible_with(TensorShape(list(arr.shape))):
            raise errors.InvalidArgumentError(
                f"`generator` yielded an element of shape {arr.shape} where an element of "
                f"shape {tuple(shape.as_list()) if shape.dims is not None else None} was "
                "expected.", op=self.op,
                hint=tr("yield values of the shapes given in output_shapes."))
        return arr


def _kernel(ctx: Any, *args: Any) -> _Generated:
    for name, fn in ctx.op.graph.get_collection(GENERATORS):
        if name == ctx.attrs["generator"]:
            values = [np.asarray(ctx.device.to_host(a)) for a in args]
            return _Generated(fn, values, ctx.attrs["output_types"], ctx.attrs["output_shapes"],
                              ctx.op)
    raise errors.UnimplementedError(
        f"The generator of '{ctx.op.name}' is not in this process", op=ctx.op,
        hint=tr("Dataset.from_generator runs Python code of the process that built the graph; "
                "run the dataset there (no device on another task)."))


register_op("GeneratorDataset", lambda op: [(dtypes.variant, TensorShape([]))], _kernel,
            gpu_types=frozenset(), stateful=True)
not_differentiable("GeneratorDataset")


def register_generator(graph: Graph, fn: Callable) -> str:
    """Keep ``fn`` in ``graph`` and return the name a GeneratorDataset op gives it."""
    if not callable(fn):
        raise TypeError(errors.with_hint("`generator` must be callable.", tr(
            "pass the generator function itself (from_generator(gen)), not gen().")))
    library = graph.get_collection_ref(GENERATORS)
    name = f"generator_{len(library)}"
    library.append((name, fn))
    return name
