"""``tf.data.Dataset`` as graph ops: sources, transformations, and the ``Dataset`` objects.

Every dataset op (``TensorSliceDataset``, ``RangeDataset``, ``MapDataset``, ``BatchDatasetV2``, ``ShuffleDataset``, ``RepeatDataset``, ``PrefetchDataset``,
...) gives a scalar ``variant``: a description of a stream of elements, not the elements. An
iterator (``tfteach.ops.iterator_ops``) asks the description for a fresh stream,
``value.elements(env)``: a Python generator of flat tuples of host arrays, evaluated lazily, one
element per ``IteratorGetNext``. ``env`` carries the device and resources of the step that asks,
so a map function's kernels run there. ``shuffle`` draws from a buffer of ``buffer_size``
elements (a new order per epoch; seeded as TF seeds, though not TF's numbers). Repeat, take,
skip, shard, zip, concatenate, cache and prefetch are in ``dataset_reshape_ops``, flat_map
and interleave in ``dataset_flat_map_ops``, the datasets that read files
(``TextLineDataset``) in ``dataset_file_ops``. Dataset ops run on the CPU only.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape, as_shape
from tfteach.i18n import tr
from tfteach.ops import dataset_batch_ops as _batch  # noqa: F401 - batch, padded_batch
from tfteach.ops import dataset_flat_map_ops as _flat  # noqa: F401 - flat_map, interleave
from tfteach.ops import dataset_reshape_ops as _reshape  # noqa: F401 - repeat, take, zip, ...
from tfteach.ops import iterator_ops
from tfteach.ops.common import const_value, convert_to_tensor
from tfteach.ops.dataset_generator_ops import register_generator
from tfteach.ops.dataset_functions import (Structured, flatten, lookup, map_structure, pack,
                                           trace)

_VARIANT = [(dtypes.variant, TensorShape([]))]
_DATASET = {"gpu_types": frozenset(), "cheap": True}


def _host(env: Any, value: Any) -> np.ndarray:
    return np.asarray(env.device.to_host(value))


# ---- sources -----------------------------------------------------------------------------------
class _Slices:
    def __init__(self, arrays: list) -> None:
        self.arrays = arrays

    def elements(self, env: Any) -> Iterator[tuple]:
        for i in range(len(self.arrays[0])):
            yield tuple(a[i] for a in self.arrays)


class _Tensors:
    def __init__(self, arrays: list) -> None:
        self.arrays = arrays

    def elements(self, env: Any) -> Iterator[tuple]:
        yield tuple(self.arrays)


class _Range:
    def __init__(self, start: int, stop: int, step: int) -> None:
        self.bounds = (start, stop, step)

    def elements(self, env: Any) -> Iterator[tuple]:
        for i in range(*self.bounds):
            yield (np.array(i, dtype=np.int64),)


def _slices_kernel(ctx: Any, *components: Any) -> _Slices:
    arrays = [np.asarray(ctx.device.to_host(c)) for c in components]
    rows = {a.shape[0] if a.ndim else None for a in arrays}
    if None in rows or len(rows) != 1:
        raise errors.InvalidArgumentError(
            "All components must have the same size in the 0th dimension", op=ctx.op,
            hint=tr("from_tensor_slices gives one element per row: every component needs "
                    "the same number of rows."))
    return _Slices(arrays)


def _range_kernel(ctx: Any, start: Any, stop: Any, step: Any) -> _Range:
    bounds = [int(ctx.device.to_host(v)) for v in (start, stop, step)]
    if bounds[2] == 0:
        raise errors.InvalidArgumentError("step must be a non-zero integer.", op=ctx.op,
                                          hint=tr("give Dataset.range a step other than 0."))
    return _Range(*bounds)


# ---- transformations ---------------------------------------------------------------------------
class _Map:
    def __init__(self, source: Any, func: Any, captured: list, keep: bool) -> None:
        self.source, self.func, self.captured, self.keep = source, func, captured, keep

    def elements(self, env: Any) -> Iterator[tuple]:
        for element in self.source.elements(env):
            out = self.func.call(env, element, self.captured)
            if not self.keep:
                yield tuple(_host(env, v) for v in out)
            elif bool(_host(env, out[0])):
                yield element


class _Shuffle:
    def __init__(self, source: Any, size: int, seeds: tuple, reshuffle: bool) -> None:
        self.source, self.size, self.seeds, self.reshuffle = source, size, seeds, reshuffle
        self.epoch = 0
        self.fixed = np.random.SeedSequence().entropy

    def elements(self, env: Any) -> Iterator[tuple]:
        rng = self._rng()
        buffer: list = []
        for element in self.source.elements(env):
            buffer.append(element)
            if len(buffer) >= self.size:
                yield buffer.pop(int(rng.integers(len(buffer))))
        while buffer:
            yield buffer.pop(int(rng.integers(len(buffer))))

    def _rng(self) -> np.random.Generator:
        epoch = self.epoch if self.reshuffle else 0
        self.epoch += 1
        if self.seeds == (0, 0):
            return np.random.default_rng([self.fixed, epoch])
        return np.random.default_rng([*self.seeds, epoch])


def _scalar(ctx: Any, v: Any) -> int:
    return int(ctx.device.to_host(v))


def _map_kernel(ctx: Any, source: Any, *captured: Any) -> _Map:
    func = lookup(ctx.op.graph, ctx.attrs["f"], ctx.attrs["f_def"])
    return _Map(source, func, list(captured), keep=ctx.op.type == "FilterDataset")


def _shuffle_kernel(ctx: Any, source: Any, size: Any, seed: Any, seed2: Any) -> _Shuffle:
    n = _scalar(ctx, size)
    if n <= 0:
        raise errors.InvalidArgumentError("buffer_size must be greater than zero.", op=ctx.op,
                                          hint=tr("give shuffle() a buffer of 1 or more "
                                                  "elements (the data set's size shuffles "
                                                  "it all)."))
    return _Shuffle(source, n, (_scalar(ctx, seed), _scalar(ctx, seed2)),
                    bool(ctx.attrs["reshuffle_each_iteration"]))


def _register(op_type: str, kernel: Callable) -> None:
    register_op(op_type, lambda op: _VARIANT, kernel, **_DATASET)
    not_differentiable(op_type)


_register("TensorSliceDataset", _slices_kernel)
_register("TensorDataset", lambda ctx, *c: _Tensors([np.asarray(ctx.device.to_host(x))
                                                      for x in c]))
_register("RangeDataset", _range_kernel)
_register("MapDataset", _map_kernel)
_register("FilterDataset", _map_kernel)
_register("ShuffleDataset", _shuffle_kernel)


# ---- the Python API ----------------------------------------------------------------------------
def _normalize(value: Any) -> Any:
    """Each component of a structure as a tensor (a list is one tensor, as in TF)."""
    if isinstance(value, tuple):
        return tuple(_normalize(v) for v in value)
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    return convert_to_tensor(value)


class Dataset(Structured):
    """``tf.data.Dataset``: a stream of elements (tensors, tuples or dicts of them), built as
    graph ops. Transformations return new datasets; an iterator reads one."""

    def __init__(self, variant: Tensor, types: Any, shapes: Any) -> None:
        self._variant_tensor = variant
        self._types = types
        self._shapes = shapes

    def _op(self, op_type: str, inputs: list, attrs: dict, types: Any, shapes: Any) -> "Dataset":
        return _dataset_op(op_type, [self._variant_tensor] + inputs, attrs, types, shapes)

    # ---- sources
    @staticmethod
    def from_tensor_slices(tensors: Any) -> "Dataset":
        """One element per row of ``tensors`` (every component sliced along its first axis)."""
        with get_default_graph().name_scope("tensors"):
            element = _normalize(tensors)
        flat = flatten(element)
        rows = {t.shape.dims[0] for t in flat if t.shape.dims} - {None}
        if any(t.shape.ndims == 0 for t in flat) or len(rows) > 1:
            raise ValueError(errors.with_hint(
                f"Dimensions {' and '.join(str(r) for r in sorted(rows))} are not compatible"
                if len(rows) > 1 else
                "Slicing dataset elements requires tensors of rank 1 or more.",
                tr("from_tensor_slices gives one element per row: every component needs "
                   "the same number of rows.")))
        return _dataset_op("TensorSliceDataset", flat, {},
                           map_structure(lambda t: t.dtype, element),
                           map_structure(lambda t: TensorShape(t.shape.dims[1:])
                                         if t.shape.dims is not None else TensorShape(None),
                                         element))

    @staticmethod
    def from_tensors(tensors: Any) -> "Dataset":
        """One element: ``tensors`` as they are."""
        with get_default_graph().name_scope("tensors"):
            element = _normalize(tensors)
        return _dataset_op("TensorDataset", flatten(element), {},
                           map_structure(lambda t: t.dtype, element),
                           map_structure(lambda t: t.shape, element))

    @staticmethod
    def from_generator(generator: Callable, output_types: Any, output_shapes: Any = None,
                       args: Any = None) -> "Dataset":
        """One element per value ``generator(*args)`` yields (converted to ``output_types``)."""
        shapes = output_shapes if output_shapes is not None else \
            map_structure(lambda _: TensorShape(None), output_types)
        types = map_structure(dtypes.as_dtype, output_types)
        shapes = map_structure(as_shape, shapes) if isinstance(shapes, (tuple, dict)) \
            else as_shape(shapes)
        g = get_default_graph()
        name = register_generator(g, generator)
        inputs = [convert_to_tensor(a, name="args") for a in (args or ())]
        return _dataset_op("GeneratorDataset", inputs, {"generator": name}, types, shapes)

    @staticmethod
    def range(*args: Any, output_type: Any = dtypes.int64) -> "Dataset":
        """``range(stop)``, ``range(start, stop)``, ``range(start, stop, step)`` (int64)."""
        if not 1 <= len(args) <= 3:
            raise ValueError(errors.with_hint("Invalid arguments to range()", tr(
                "Dataset.range takes (stop), (start, stop) or (start, stop, step).")))
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        inputs = [convert_to_tensor(v, dtype=dtypes.int64, name=n)
                  for v, n in zip((start, stop, step), ("start", "stop", "step"), strict=True)]
        return _dataset_op("RangeDataset", inputs, {}, dtypes.int64, TensorShape([]))

    # ---- transformations
    def map(self, map_func: Callable, num_parallel_calls: Any = None) -> "Dataset":
        """Apply ``map_func`` to every element (traced once into a function)."""
        func = trace(map_func, self._variant_tensor.graph, self._types, self._shapes, "Dataset_map")
        types = pack(func.structure, [t.dtype for t in func.outputs])
        shapes = pack(func.structure, [t.shape for t in func.outputs])
        return self._op("MapDataset", func.captured, {"f": func.name, "f_def": func.definition()},
                        types, shapes)

    def filter(self, predicate: Callable) -> "Dataset":
        """Keep the elements for which ``predicate`` gives True (a scalar bool)."""
        func = trace(predicate, self._variant_tensor.graph, self._types, self._shapes,
                     "Dataset_filter")
        out = func.outputs
        if len(out) != 1 or out[0].dtype is not dtypes.bool_ or out[0].shape.ndims not in (0, None):
            raise ValueError(errors.with_hint(
                "`predicate` return type must be convertible to a scalar boolean tensor.",
                tr("the filter function must return one bool per element, e.g. "
                   "tf.equal(x, 0).")))
        return self._op("FilterDataset", func.captured,
                        {"f": func.name, "f_def": func.definition()}, self._types, self._shapes)

    def flat_map(self, map_func: Callable) -> "Dataset":
        """The elements of the datasets ``map_func`` makes of each element, one after another."""
        func, inner = self._dataset_function(map_func, "Dataset_flat_map")
        return self._op("FlatMapDataset", func.captured, {"f": func.name, "f_def":
                        func.definition()}, inner.output_types, inner.output_shapes)

    def interleave(self, map_func: Callable, cycle_length: Any = None, block_length: Any = None,
                   num_parallel_calls: Any = None) -> "Dataset":
        """The datasets ``map_func`` makes of ``cycle_length`` elements at a time, taking
        ``block_length`` elements from each in turn (TF's deterministic order)."""
        func, inner = self._dataset_function(map_func, "Dataset_interleave")
        lengths = [convert_to_tensor(v, dtype=dtypes.int64, name=n) for v, n in (
            (-1 if cycle_length is None else cycle_length, "cycle_length"),
            (1 if block_length is None else block_length, "block_length"))]
        return self._op("InterleaveDataset", func.captured + lengths, {"f": func.name, "f_def":
                        func.definition()}, inner.output_types, inner.output_shapes)

    def _dataset_function(self, map_func: Callable, what: str) -> tuple:
        """``map_func`` traced; it must return a Dataset (its variant is the output)."""
        made: list = []

        def body(*args: Any) -> Tensor:
            ds = map_func(*args)
            if not isinstance(ds, Dataset):
                raise TypeError(errors.with_hint(
                    f"The `map_func` argument must return a `Dataset` object. Got {type(ds)}.",
                    tr("return a dataset from the function, e.g. "
                       "tf.data.Dataset.from_tensors(x).repeat(3).")))
            made.append(ds)
            return ds._variant_tensor
        body.__name__ = getattr(map_func, "__name__", "fn")
        return trace(body, self._variant_tensor.graph, self._types, self._shapes, what), made[0]

    def batch(self, batch_size: Any, drop_remainder: bool = False) -> "Dataset":
        """Stack ``batch_size`` consecutive elements (the last batch may be smaller)."""
        size, drop, first = self._batch_args(batch_size, drop_remainder)
        shapes = map_structure(lambda s: TensorShape([first] + list(s.dims))
                               if s.dims is not None else TensorShape(None), self._shapes)
        return self._op("BatchDatasetV2", [size, drop], {}, self._types, shapes)

    def padded_batch(self, batch_size: Any, padded_shapes: Any = None,
                     padding_values: Any = None, drop_remainder: bool = False) -> "Dataset":
        """Batches whose components are padded to ``padded_shapes`` (None or -1: to the
        batch's largest) with ``padding_values`` (default 0, or b"" for strings)."""
        size, drop, first = self._batch_args(batch_size, drop_remainder)
        wanted = padded_shapes if padded_shapes is not None else self._shapes
        wanted = pack(self._types, [as_shape(s) for s in flatten(wanted)]) \
            if isinstance(wanted, (tuple, dict)) else as_shape(wanted)
        types = flatten(self._types)
        values = flatten(padding_values) if padding_values is not None else \
            [b"" if t is dtypes.string else 0 for t in types]
        dims = [convert_to_tensor([-1 if d is None else d for d in s.dims], dtype=dtypes.int64,
                                  name="padded_shapes") for s in flatten(wanted)]
        pads = [convert_to_tensor(v, dtype=t, name="padding_values")
                for v, t in zip(values, types, strict=True)]
        shapes = map_structure(lambda s: TensorShape([first] + list(s.dims)), wanted)
        return self._op("PaddedBatchDatasetV2", [size] + dims + pads + [drop],
                        {"N": len(types)}, self._types, shapes)

    @staticmethod
    def _batch_args(batch_size: Any, drop_remainder: bool) -> tuple:
        size = convert_to_tensor(batch_size, dtype=dtypes.int64, name="batch_size")
        drop = convert_to_tensor(drop_remainder, dtype=dtypes.bool_, name="drop_remainder")
        n = const_value(size)
        return size, drop, int(n) if drop_remainder and n is not None else None

    def shuffle(self, buffer_size: Any, seed: int | None = None,
                reshuffle_each_iteration: bool | None = None) -> "Dataset":
        """Draw each element at random from a buffer of ``buffer_size`` elements."""
        from tfteach.ops.random_ops import get_seed
        s1, s2 = get_seed(seed)
        inputs = [convert_to_tensor(buffer_size, dtype=dtypes.int64, name="buffer_size"),
                  convert_to_tensor(s1, dtype=dtypes.int64, name="seed"),
                  convert_to_tensor(s2, dtype=dtypes.int64, name="seed2")]
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._op("ShuffleDataset", inputs, {"reshuffle_each_iteration": reshuffle},
                        self._types, self._shapes)

    def _counted(self, op_type: str, count: Any) -> "Dataset":
        n = convert_to_tensor(-1 if count is None else count, dtype=dtypes.int64, name="count")
        return self._op(op_type, [n], {}, self._types, self._shapes)

    def repeat(self, count: Any = None) -> "Dataset":
        """The dataset ``count`` times (None or -1: forever)."""
        return self._counted("RepeatDataset", count)

    def take(self, count: Any) -> "Dataset":
        return self._counted("TakeDataset", count)

    def skip(self, count: Any) -> "Dataset":
        return self._counted("SkipDataset", count)

    def shard(self, num_shards: Any, index: Any) -> "Dataset":
        """Every ``num_shards``-th element from ``index`` on (one worker's part)."""
        n = convert_to_tensor(num_shards, dtype=dtypes.int64, name="num_shards")
        i = convert_to_tensor(index, dtype=dtypes.int64, name="index")
        return self._op("ShardDataset", [n, i], {}, self._types, self._shapes)

    def concatenate(self, dataset: "Dataset") -> "Dataset":
        """This dataset's elements, then ``dataset``'s (of the same types)."""
        if flatten(dataset.output_types) != flatten(self._types):
            raise TypeError(errors.with_hint(
                f"Two datasets to concatenate have different types {self._types} and "
                f"{dataset.output_types}", tr("concatenate datasets whose elements have the "
                                              "same dtypes (tf.cast in a map first).")))
        shapes = pack(self._shapes, [_common(a, b) for a, b in zip(
            flatten(self._shapes), flatten(dataset.output_shapes), strict=True)])
        return self._op("ConcatenateDataset", [dataset._variant_tensor], {}, self._types, shapes)

    def cache(self, filename: str = "") -> "Dataset":
        """The first complete pass kept (in memory, whatever ``filename`` says) and replayed."""
        name = convert_to_tensor(filename, dtype=dtypes.string, name="filename")
        return self._op("CacheDataset", [name], {}, self._types, self._shapes)

    @staticmethod
    def zip(datasets: Any) -> "Dataset":
        """Elements of several datasets side by side (a tuple or dict of datasets), until
        the shortest ends."""
        parts = flatten(datasets)
        return _dataset_op("ZipDataset", [d._variant_tensor for d in parts], {},
                           pack(datasets, [d.output_types for d in parts]),
                           pack(datasets, [d.output_shapes for d in parts]))

    def prefetch(self, buffer_size: Any) -> "Dataset":
        """Keep ``buffer_size`` elements ready (tfteach computes each when it is asked for)."""
        size = convert_to_tensor(buffer_size, dtype=dtypes.int64, name="buffer_size")
        return self._op("PrefetchDataset", [size], {}, self._types, self._shapes)

    # ---- iterators
    def make_one_shot_iterator(self) -> "iterator_ops.Iterator":
        return iterator_ops.make_one_shot_iterator(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> "iterator_ops.Iterator":
        return iterator_ops.make_initializable_iterator(self, shared_name)


def _common(a: TensorShape, b: TensorShape) -> TensorShape:
    """The most specific shape both fit (TF's most_specific_compatible_shape)."""
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.dims, b.dims, strict=True)])


def dataset_attrs(types: Any, shapes: Any) -> dict:
    """A dataset op's ``output_types`` and ``output_shapes`` attrs."""
    return {"output_types": flatten(types), "output_shapes": flatten(shapes)}


def _dataset_op(op_type: str, inputs: list, attrs: dict, types: Any, shapes: Any) -> Dataset:
    g = inputs[0].graph if inputs else get_default_graph()
    op = g.create_op(op_type, inputs, {**attrs, **dataset_attrs(types, shapes)}, name=op_type)
    return Dataset(op.outputs[0], types, shapes)
