"""Sizes typed by the learner are checked before a kernel allocates: shapes are int64 end to
end and overflow is an error; an output larger than the machine's memory, and a kernel's
MemoryError, are ResourceExhaustedError naming the op, the device and the bytes."""
from __future__ import annotations

import pytest

import tfteach as tf
from tfteach import errors

HUGE = [2**40, 2**40]   # 2**80 elements: more than int64 counts


def _run(make, feed=None):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        y = make()
        with tf.Session() as session:
            return y, session.run(y, feed(graph) if feed else None)


def test_a_shape_that_needs_int64_keeps_its_values():
    with tf.Graph().as_default():
        y = tf.reshape(tf.placeholder(tf.float32), [2**31, 2])
        assert y.op.inputs[1].dtype == tf.int64
        assert y.shape.as_list() == [2**31, 2]
        assert tf.fill([2**33], 0.0).shape.as_list() == [2**33]


def test_reshape_to_an_overflowing_constant_shape_fails_while_building():
    with tf.Graph().as_default(), pytest.raises(ValueError, match="1099511627776"):
        tf.reshape(tf.constant([1.0]), HUGE)


def test_reshape_to_an_overflowing_fed_shape_fails_at_run_time():
    def feed(graph):
        x, s = [op.outputs[0] for op in graph.get_operations() if op.type == "Placeholder"]
        return {x: [1.0], s: HUGE}

    with pytest.raises(errors.InvalidArgumentError, match="has too many elements"):
        _run(lambda: tf.reshape(tf.placeholder(tf.float32), tf.placeholder(tf.int64)), feed)


@pytest.mark.parametrize("make", [lambda: tf.fill(HUGE, 1.0), lambda: tf.zeros(HUGE)],
                         ids=["fill", "zeros"])
def test_fill_and_zeros_of_an_overflowing_shape_are_invalid(make):
    with pytest.raises(errors.InvalidArgumentError, match="more than 2\\*\\*63 - 1 elements"):
        _run(make)


@pytest.mark.parametrize("make", [
    lambda: tf.one_hot(tf.zeros([1024], tf.int32), depth=2**31 - 1),
    lambda: tf.tile(tf.constant([[1.0]]), [2**24, 2**24]),
    lambda: tf.tile(tf.constant([1.0]), [2**40]),
    lambda: tf.fill([2**24, 2**24], 1.0),
    lambda: tf.random_uniform([2**24, 2**24]),
], ids=["one_hot", "tile", "tile-int64", "fill", "random_uniform"])
def test_an_output_larger_than_memory_is_resource_exhausted_before_allocating(make):
    with pytest.raises(errors.ResourceExhaustedError) as caught:
        _run(make)
    message = str(caught.value)
    assert message.startswith("OOM when allocating tensor with shape[")
    assert "device:CPU:0" in message and "bytes" in message and "Hint:" in message
    assert caught.value.op is not None and caught.value.op.name in message


def test_a_kernels_memory_error_is_resource_exhausted():
    # 2**48 float32 values (1 PiB): more than any address space gives, so NumPy's
    # allocation fails at once with MemoryError (BroadcastTo has no size check of its own).
    with pytest.raises(errors.ResourceExhaustedError) as caught:
        _run(lambda: tf.broadcast_to(tf.constant(1.0), [2**24, 2**24]))
    message = str(caught.value)
    assert "OOM when allocating tensor on /job:localhost/replica:0/task:0/device:CPU:0" in message
    assert "BroadcastTo" in message and "PiB" in message and "Hint:" in message
