"""Queue-based batching (TF 1.x): ``tf.train.batch``, ``shuffle_batch``, ``batch_join`` and
``shuffle_batch_join``.

Each builds, under one name scope (``batch``, ``shuffle_batch``, ...), a queue (``FIFOQueue``
or ``RandomShuffleQueue``), enqueue ops that a ``QueueRunner`` runs in ``num_threads``
threads (added to ``QUEUE_RUNNERS``: start them with ``tf.train.start_queue_runners``), a
summary of how full the queue is, and a dequeue of ``batch_size`` elements
(``dequeue_up_to`` with ``allow_smaller_final_batch``, so the last batch of a finite input
may be smaller). The input's structure comes back: a dict gives a dict, a list of one tensor
gives that tensor, a list of several gives a list. When the input ends (an input producer
with ``num_epochs`` raises OutOfRangeError), the runner closes the queue and the dequeue
raises OutOfRangeError once the queue holds too few elements.
"""
from __future__ import annotations

from typing import Any

from tfteach.errors import with_hint
from tfteach.framework import dtypes
from tfteach.framework.graph import Tensor, get_default_graph
from tfteach.framework.tensor_shape import TensorShape, as_shape
from tfteach.i18n import tr
from tfteach.ops.array_ops import cast
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.math_ops import maximum, multiply, subtract
from tfteach.ops.queue_ops import FIFOQueue
from tfteach.ops.shuffle_queue_ops import RandomShuffleQueue
from tfteach.train.queue_runner import QueueRunner, add_queue_runner
from tfteach.train.summaries import scalar


def _as_list(tensors: Any) -> list:
    if isinstance(tensors, dict):
        return [tensors[k] for k in sorted(tensors, key=str)]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    return [tensors]


def _as_original(tensors: Any, dequeued: Any) -> Any:
    if isinstance(tensors, dict):
        values = dequeued if isinstance(dequeued, list) else [dequeued]
        return {k: values[i] for i, k in enumerate(sorted(tensors, key=str))}
    return dequeued


def _shapes(tensor_list: list, shapes: Any, enqueue_many: bool) -> list[TensorShape]:
    if shapes is not None:
        return [as_shape(s) for s in shapes]
    out = [TensorShape(t.shape.dims[1:]) if enqueue_many and t.shape.dims else t.shape
           for t in tensor_list]
    if not all(s.is_fully_defined() for s in out):
        raise ValueError(with_hint(
            f"All shapes must be fully defined: {out}",
            tr("give every input tensor a known shape (tf.reshape or set_shape), or pass "
               "shapes=[...] to the batch function.")))
    return out


def _convert(tensors_list: list) -> list[list[Tensor]]:
    return [[convert_to_tensor(t) for t in _as_list(tensors)] for tensors in tensors_list]


def _batched(tensors: Any, tensors_list: list, batch_size: Any, queue_fn: Any,
             enqueue_many: bool, shapes: Any, allow_smaller: bool, summary: str,
             capacity: float, floor: int, name: str) -> Any:
    """What every batch function does: queue, enqueue ops and their runner, summary, dequeue."""
    g = get_default_graph()
    with g.name_scope(name) as scope:
        lists = _convert(tensors_list)
        types = [t.dtype for t in lists[0]]
        if any([t.dtype for t in tl] != types for tl in lists):
            raise ValueError(with_hint(
                "Expected types to be the same in every tensor list: "
                f"{[[t.dtype.name for t in tl] for tl in lists]}",
                tr("every list given to a *_join batch must hold tensors of the same "
                   "dtypes, in the same order.")))
        queue = queue_fn(types, _shapes(lists[0], shapes, enqueue_many))
        enqueue = queue.enqueue_many if enqueue_many else queue.enqueue
        add_queue_runner(QueueRunner(queue, [enqueue(tl) for tl in lists]))
        size = queue.size()
        if floor:       # a shuffle queue: only what is above min_after_dequeue counts
            size = maximum(0, subtract(size, floor))
        scalar(summary, multiply(cast(size, dtypes.float32), 1.0 / capacity))
        dequeue = queue.dequeue_up_to if allow_smaller else queue.dequeue_many
        return _as_original(tensors, dequeue(batch_size, name=scope))


def batch(tensors: Any, batch_size: Any, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: str | None = None,
          name: str | None = None) -> Any:
    """``tf.train.batch``: batches of ``batch_size`` elements in the order they came in."""
    return batch_join([tensors] * num_threads, batch_size, capacity, enqueue_many, shapes,
                      dynamic_pad, allow_smaller_final_batch, shared_name, name or "batch",
                      tensors)


def batch_join(tensors_list: list, batch_size: Any, capacity: int = 32,
               enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
               allow_smaller_final_batch: bool = False, shared_name: str | None = None,
               name: str | None = None, _original: Any = None) -> Any:
    """``tf.train.batch_join``: one enqueue thread per tensor list (one reader each)."""
    _no_dynamic_pad(dynamic_pad)

    def queue_fn(types: list, shapes_: list) -> FIFOQueue:
        return FIFOQueue(capacity, types, shapes_, shared_name=shared_name)
    original = tensors_list[0] if _original is None else _original
    return _batched(original, tensors_list, batch_size, queue_fn, enqueue_many, shapes,
                    allow_smaller_final_batch, f"fraction_of_{capacity}_full", capacity, 0,
                    name or "batch_join")


def shuffle_batch(tensors: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                  num_threads: int = 1, seed: int | None = None, enqueue_many: bool = False,
                  shapes: Any = None, allow_smaller_final_batch: bool = False,
                  shared_name: str | None = None, name: str | None = None) -> Any:
    """``tf.train.shuffle_batch``: batches drawn at random from a queue that keeps at least
    ``min_after_dequeue`` elements (until the input ends)."""
    return shuffle_batch_join([tensors] * num_threads, batch_size, capacity, min_after_dequeue,
                              seed, enqueue_many, shapes, allow_smaller_final_batch,
                              shared_name, name or "shuffle_batch", tensors)


def shuffle_batch_join(tensors_list: list, batch_size: Any, capacity: int,
                       min_after_dequeue: int, seed: int | None = None,
                       enqueue_many: bool = False, shapes: Any = None,
                       allow_smaller_final_batch: bool = False, shared_name: str | None = None,
                       name: str | None = None, _original: Any = None) -> Any:
    """``tf.train.shuffle_batch_join``: shuffle_batch with one enqueue thread per list."""
    def queue_fn(types: list, shapes_: list) -> RandomShuffleQueue:
        return RandomShuffleQueue(capacity, min_after_dequeue, types, shapes_, seed=seed,
                                  shared_name=shared_name)
    original = tensors_list[0] if _original is None else _original
    return _batched(original, tensors_list, batch_size, queue_fn, enqueue_many, shapes,
                    allow_smaller_final_batch,
                    f"fraction_over_{min_after_dequeue}_of_{capacity - min_after_dequeue}_full",
                    max(capacity - min_after_dequeue, 1), min_after_dequeue,
                    name or "shuffle_batch_join")


def _no_dynamic_pad(dynamic_pad: bool) -> None:
    if dynamic_pad:
        raise NotImplementedError(with_hint(
            "tfteach's tf.train.batch has no dynamic_pad.",
            tr("pad the elements to one shape before batching (tf.pad), or use tf.data's "
               "batch on elements of one shape.")))
