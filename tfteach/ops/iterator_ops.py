"""Iterators over ``tf.data`` datasets: ``OneShotIterator``, ``IteratorV2``, ``MakeIterator``,
``IteratorGetNext``, and the ``Iterator`` objects that build them.

An iterator is a resource in the container of the task that runs its handle op (as a queue):
state ``stream`` (the generator of flat element tuples that its dataset's variant gave, or
None before it is initialized) and ``env`` (the device and resources of the step now asking,
so map functions run there). ``MakeIterator`` (``iterator.initializer``) starts a new stream;
a one-shot iterator starts one the first time its handle runs, from the dataset it takes as
an input (so it cannot depend on a placeholder). ``IteratorGetNext`` gives the next element,
OutOfRangeError ("End of sequence") once the stream has ended, FailedPreconditionError before
initialization. The lock serialises concurrent GetNexts: each element is given once.
A feedable iterator (``Iterator.from_string_handle``) reads whichever iterator the string fed
to it names (``iterator.string_handle()``: the resource's container and name).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tfteach import errors
from tfteach.framework import dtypes
from tfteach.framework.graph import Operation, Tensor
from tfteach.framework.registry import not_differentiable, register_op
from tfteach.framework.tensor_shape import TensorShape
from tfteach.i18n import tr
from tfteach.ops.data_flow_ops import shared_resource
from tfteach.ops.dataset_functions import Structured, flatten, map_structure, pack

_HANDLE = [(dtypes.string, TensorShape([]))]
_CPU = frozenset()


class _Env:
    """Where the elements now asked for are computed: the asking step's device and resources."""

    __slots__ = ("device", "resources")

    def update(self, ctx: Any) -> None:
        self.device = ctx.device
        self.resources = ctx.resources


class IteratorResource:
    """An iterator's state (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.stream: Any = None
        self.env = _Env()

    def start(self, ctx: Any, dataset: Any) -> None:
        with self.lock:
            self.env.update(ctx)
            self.stream = dataset.elements(self.env)

    def next(self, ctx: Any) -> tuple:
        with self.lock:
            if self.stream is None:
                raise errors.FailedPreconditionError(
                    "GetNext() failed because the iterator has not been initialized. Ensure "
                    "that you have run the initializer operation for this iterator before "
                    "getting the next element.", op=ctx.op,
                    hint=tr("run sess.run(iterator.initializer) (feeding its placeholders) "
                            "before the first get_next()."))
            self.env.update(ctx)
            try:
                return next(self.stream)
            except StopIteration:
                raise errors.OutOfRangeError("End of sequence", op=ctx.op, hint=tr(
                    "the iterator has given every element of its dataset: this is how tf.data "
                    "says 'end of data'; catch tf.errors.OutOfRangeError to stop, or run the "
                    "iterator's initializer to start again.")) from None

    def release(self) -> None:
        with self.lock:
            self.stream = None

    def read(self, op: Any = None) -> np.ndarray:
        return np.array(self.name.encode(), dtype=object)


def _resource(ctx: Any) -> IteratorResource:
    name = ctx.attrs.get("shared_name") or ctx.op.name
    return shared_resource(ctx.resources, "iterator", name, lambda: IteratorResource(name),
                           ctx.attrs.get("container", ""))


def _one_shot_kernel(ctx: Any, dataset: Any) -> IteratorResource:
    it = _resource(ctx)
    if it.stream is None:
        it.start(ctx, dataset)
    return it


def _make_iterator_kernel(ctx: Any, dataset: Any, it: IteratorResource) -> None:
    it.start(ctx, dataset)


def _get_next_kernel(ctx: Any, it: IteratorResource) -> Any:
    element = it.next(ctx)
    return element[0] if len(element) == 1 else element


def _to_string_kernel(ctx: Any, it: IteratorResource) -> np.ndarray:
    return np.array(f"{ctx.op.inputs[0].op.attrs.get('container', '')}/{it.name}".encode(),
                    dtype=object)


def _from_string_kernel(ctx: Any, handle: Any) -> IteratorResource:
    text = np.asarray(ctx.device.to_host(handle)).item()
    container, _, name = (text.decode() if isinstance(text, bytes) else str(text)).partition("/")
    found = ctx.resources.table(container).get(f"iterator:{name}")
    if found is None:
        raise errors.NotFoundError(
            f"Resource {container}/{name} of type iterator does not exist.", op=ctx.op,
            hint=tr("feed the value of sess.run(iterator.string_handle()) of an iterator of "
                    "this session."))
    return found


def _get_next_shape(op: Operation) -> list:
    return list(zip(op.attrs["output_types"], op.attrs["output_shapes"], strict=True))


_HANDLE_FACTS = {"gpu_types": _CPU, "stateful": True, "ref_output": True}
_USES = {"gpu_types": _CPU, "stateful": True}
register_op("IteratorV2", lambda op: _HANDLE, _resource, **_HANDLE_FACTS)
register_op("OneShotIterator", lambda op: _HANDLE, _one_shot_kernel, **_HANDLE_FACTS)
register_op("MakeIterator", lambda op: [], _make_iterator_kernel, ref_inputs=(1,), **_USES)
register_op("IteratorGetNext", _get_next_shape, _get_next_kernel, ref_inputs=(0,), **_USES)
register_op("IteratorToStringHandle", lambda op: _HANDLE, _to_string_kernel, ref_inputs=(0,),
            **_USES)
register_op("IteratorFromStringHandleV2", lambda op: _HANDLE, _from_string_kernel,
            **_HANDLE_FACTS)
not_differentiable("IteratorV2", "OneShotIterator", "MakeIterator", "IteratorGetNext",
                   "IteratorToStringHandle", "IteratorFromStringHandleV2")


# ---- the Python API ----------------------------------------------------------------------------
class Iterator(Structured):
    """``tf.data.Iterator``: ``get_next()`` gives the next element; ``initializer`` (None for a
    one-shot iterator) starts it over."""

    def __init__(self, handle: Tensor, initializer: Operation | None, types: Any,
                 shapes: Any) -> None:
        self._handle = handle
        self._initializer = initializer
        self._types = types
        self._shapes = shapes

    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            raise ValueError(errors.with_hint(
                "Iterator does not have an initializer.",
                tr("a one-shot iterator starts by itself; use "
                   "dataset.make_initializable_iterator() to restart or feed one.")))
        return self._initializer

    def get_next(self, name: str | None = None) -> Any:
        """The next element (tensors nested as the dataset's elements are)."""
        g = self._handle.graph
        op = g.create_op("IteratorGetNext", [self._handle],
                         {"output_types": flatten(self._types),
                          "output_shapes": flatten(self._shapes)},
                         name=name or "IteratorGetNext")
        return pack(self._types, list(op.outputs))

    def make_initializer(self, dataset: Any, name: str | None = None) -> Operation:
        """An op that starts this iterator over ``dataset`` (of the same element types)."""
        if flatten(dataset.output_types) != flatten(self._types):
            raise TypeError(errors.with_hint(
                f"Expected output types {self._types} but got dataset with output types "
                f"{dataset.output_types}.",
                tr("an iterator made with from_structure reads only datasets whose elements "
                   "have its types.")))
        g = self._handle.graph
        return g.create_op("MakeIterator", [dataset._variant_tensor, self._handle], {},
                           name=name or "MakeIterator")

    def string_handle(self, name: str | None = None) -> Tensor:
        """A string naming this iterator, to feed to ``Iterator.from_string_handle``."""
        return self._handle.graph.create_op("IteratorToStringHandle", [self._handle], {},
                                            name=name or "IteratorToStringHandle").outputs[0]

    @staticmethod
    def from_string_handle(string_handle: Any, output_types: Any, output_shapes: Any = None,
                           output_classes: Any = None) -> "Iterator":
        """An iterator that reads the iterator whose ``string_handle()`` is fed to it."""
        from tfteach.ops.common import convert_to_tensor
        handle = convert_to_tensor(string_handle, dtype=dtypes.string, name="string_handle")
        if output_shapes is None:
            output_shapes = map_structure(lambda _: TensorShape(None), output_types)
        ref = handle.graph.create_op(
            "IteratorFromStringHandleV2", [handle],
            {"output_types": flatten(output_types), "output_shapes": flatten(output_shapes)},
            name="IteratorFromStringHandleV2").outputs[0]
        return Iterator(ref, None, output_types, output_shapes)

    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None,
                       shared_name: str | None = None, output_classes: Any = None) -> "Iterator":
        """An iterator with no dataset yet: ``make_initializer(dataset)`` gives it one."""
        from tfteach.framework.graph import get_default_graph
        if output_shapes is None:
            output_shapes = map_structure(lambda _: TensorShape(None), output_types)
        handle = get_default_graph().create_op(
            "IteratorV2", [], _handle_attrs(output_types, output_shapes, shared_name),
            name="Iterator").outputs[0]
        return Iterator(handle, None, output_types, output_shapes)


def _handle_attrs(types: Any, shapes: Any, shared_name: str | None) -> dict:
    return {"shared_name": shared_name or "", "container": "",
            "output_types": flatten(types), "output_shapes": flatten(shapes)}


def make_one_shot_iterator(dataset: Any) -> Iterator:
    """``tf.data.make_one_shot_iterator(dataset)``: reads ``dataset`` once, needs no
    initializer (the dataset may not depend on a placeholder)."""
    variant = dataset._variant_tensor
    _refuse_placeholders(variant)
    handle = variant.graph.create_op(
        "OneShotIterator", [variant],
        _handle_attrs(dataset.output_types, dataset.output_shapes, None),
        name="OneShotIterator").outputs[0]
    return Iterator(handle, None, dataset.output_types, dataset.output_shapes)


def make_initializable_iterator(dataset: Any, shared_name: str | None = None) -> Iterator:
    """``tf.data.make_initializable_iterator(dataset)``: run ``iterator.initializer`` (feeding
    the dataset's placeholders) to start it, and again to start over."""
    it = Iterator.from_structure(dataset.output_types, dataset.output_shapes, shared_name)
    it._initializer = it.make_initializer(dataset)
    return it


def _refuse_placeholders(t: Tensor) -> None:
    seen: set = set()
    stack = [t.op]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type == "Placeholder":
            raise ValueError(errors.with_hint(
                f"Cannot capture a placeholder (name:{op.name}, type:{op.type}) by value.",
                tr("a one-shot iterator cannot be fed; use "
                   "dataset.make_initializable_iterator() and feed the placeholder when "
                   "running iterator.initializer.")))
        stack.extend(i.op for i in op.inputs)
