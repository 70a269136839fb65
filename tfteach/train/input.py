"""Queue-based input pipelines: ``tf.train.input_producer`` and its relatives (TF 1.x).

``string_input_producer`` (file names), ``range_input_producer`` (indices) and
``slice_input_producer`` (a row of each tensor of a list) are input producers too.

An input producer is a ``FIFOQueue`` filled by a ``QueueRunner`` (added to the graph's
``QUEUE_RUNNERS`` collection, started by ``tf.train.start_queue_runners``) that enqueues the
whole input tensor, shuffled or not, again and again. ``num_epochs`` stops it: the tensor
goes through ``limit_epochs``, a ``CountUpTo`` on a local variable ``epochs`` (so run
``tf.local_variables_initializer()``); once it reaches ``num_epochs`` the runner closes the
queue and a dequeue of the empty, closed queue raises ``OutOfRangeError``.

Built as TF builds them (``input_producer/limit_epochs/epochs``, ``RandomShuffle`` when
``shuffle``, the summary ``fraction_of_<capacity>_full`` of how full the queue is).
"""
from __future__ import annotations

from typing import Any

from tfteach.framework import dtypes
from tfteach.framework.graph import GraphKeys, Tensor, get_default_graph
from tfteach.framework.tensor_shape import TensorShape, as_shape
from tfteach.ops import array_ops
from tfteach.ops.array_ops import cast
from tfteach.ops.common import convert_to_tensor
from tfteach.ops.data_flow_ops import FIFOQueue
from tfteach.ops.gather_ops import gather
from tfteach.ops.math_ops import multiply
from tfteach.ops.random_ops import random_shuffle
from tfteach.ops.state_ops import Variable
from tfteach.train.queue_runner import QueueRunner, add_queue_runner
from tfteach.train.summaries import scalar


def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Tensor:
    """``tensor``, which raises OutOfRangeError once it was produced ``num_epochs`` times
    (counted by the local variable ``<name>/epochs``); ``tensor`` itself when None."""
    if num_epochs is None:
        return tensor
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs}.")
    g = get_default_graph()
    with g.name_scope(name or "limit_epochs") as scope:
        zero64 = convert_to_tensor(0, dtype=dtypes.int64, name="Const")
        epochs = Variable(zero64, name="epochs", trainable=False,
                          collections=[GraphKeys.LOCAL_VARIABLES])
        counter = epochs.count_up_to(num_epochs)
        with g.control_dependencies([counter]):
            return array_ops.identity(tensor, name=scope)


def input_producer(input_tensor: Any, element_shape: Any = None, num_epochs: int | None = None,
                   shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                   shared_name: str | None = None, summary_name: str | None = None,
                   name: str | None = None, cancel_op: Any = None) -> FIFOQueue:
    """A queue of the rows of ``input_tensor`` (one element per row), refilled by a queue
    runner, ``num_epochs`` times (None: forever), shuffled each time if ``shuffle``."""
    g = get_default_graph()
    with g.name_scope(name or "input_producer"):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        shape = _element_shape(input_tensor, element_shape)
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        queue = FIFOQueue(capacity, [input_tensor.dtype], shapes=[shape],
                          shared_name=shared_name, name=name)
        enqueue = queue.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(queue, [enqueue], cancel_op=cancel_op))
        full = multiply(cast(queue.size(), dtypes.float32), 1.0 / capacity)
        scalar(summary_name or f"fraction_of_{capacity}_full", full)
        return queue


def string_input_producer(string_tensor: Any, num_epochs: int | None = None,
                          shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                          shared_name: str | None = None, name: str | None = None,
                          cancel_op: Any = None) -> FIFOQueue:
    """A queue of the strings of ``string_tensor`` (file names, usually)."""
    if not isinstance(string_tensor, Tensor) and not len(string_tensor):
        raise ValueError("string_input_producer requires a non-null input tensor")
    g = get_default_graph()
    with g.name_scope(name or "input_producer") as scope:
        strings = convert_to_tensor(string_tensor, dtype=dtypes.string)
        return input_producer(strings, [], num_epochs, shuffle, seed, capacity, shared_name,
                              None, scope, cancel_op)


def range_input_producer(limit: int, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None) -> FIFOQueue:
    """A queue of the integers ``0 .. limit-1``."""
    g = get_default_graph()
    with g.name_scope(name or "input_producer") as scope:
        return input_producer(array_ops.range_(limit), [], num_epochs, shuffle, seed,
                              capacity, shared_name, None, scope)


def slice_input_producer(tensor_list: list, num_epochs: int | None = None,
                         shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None) -> list:
    """One row of every tensor of ``tensor_list`` at a time (the same row of each): a
    ``range_input_producer`` of row indices, and a ``gather`` per tensor."""
    g = get_default_graph()
    with g.name_scope(name or "input_producer"):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        if not tensors:
            raise ValueError("Expected at least one tensor in slice_input_producer().")
        rows = array_ops.reshape(array_ops.slice_(array_ops.shape(tensors[0]), [0], [1]), [])
        queue = range_input_producer(rows, num_epochs=num_epochs, shuffle=shuffle, seed=seed,
                                     capacity=capacity, shared_name=shared_name)
        index = queue.dequeue()
        return [gather(t, index) for t in tensors]


def _element_shape(tensor: Tensor, element_shape: Any) -> TensorShape:
    rows = TensorShape(tensor.shape.dims[1:]) if tensor.shape.dims else TensorShape(None)
    shape = rows if element_shape is None else rows.merge_with(as_shape(element_shape))
    if not shape.is_fully_defined():
        raise ValueError("Either `input_tensor` must have a fully defined shape or "
                         "`element_shape` must be specified")
    return shape
