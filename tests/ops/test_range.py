"""tf.range infers its dtype as TF does (a limit past int32 makes it int64, never a wrapped
int32), and checks its size: constant arguments while building (ValueError), run-time ones
when the step runs (InvalidArgumentError), an output larger than memory before allocating
(ResourceExhaustedError naming the op and the bytes)."""
from __future__ import annotations

import numpy as np
import pytest

import tfteach as tf
from tfteach import errors


def _run(make, feed=None):
    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        y = make()
        with tf.Session() as session:
            return y, session.run(y, feed)


def test_a_limit_past_int32_makes_an_int64_range_of_the_right_length():
    with tf.Graph().as_default():
        y = tf.range(2**48)
        assert y.dtype == tf.int64
        assert y.shape.as_list() == [2**48]
        assert tf.range(0, 2**40, 2**20).shape.as_list() == [2**20]


def test_an_int64_range_counts_past_int32_without_wrapping():
    y, value = _run(lambda: tf.range(2**40, 2**40 + 6, 2))
    assert y.dtype == tf.int64 and value.dtype == np.int64
    assert value.tolist() == [2**40, 2**40 + 2, 2**40 + 4]


def test_mixed_arguments_are_cast_to_the_widest_dtype():
    with tf.Graph().as_default():
        assert tf.range(tf.constant(3, tf.int64), 10.0).dtype == tf.float32
        assert tf.range(tf.constant(1), tf.constant(5, tf.int64)).dtype == tf.int64
        assert tf.range(tf.constant(3, tf.int64), 10, dtype=tf.float32).dtype == tf.float32
        assert tf.range(5).dtype == tf.int32 and tf.range(0.5).dtype == tf.float32


@pytest.mark.parametrize("args,words", [
    ((0, 10, 0), "Requires delta != 0"),
    ((5, 0), "Requires start <= limit when delta > 0: 5/0"),
    ((0, 5, -1), "Requires start >= limit when delta < 0: 0/5"),
    ((-2**62, 2**62), "Requires ((limit - start) / delta) <= 9223372036854775807"),
    ((0.0, 1e30), "Requires ((limit - start) / delta) <= 9223372036854775807"),
])
def test_invalid_constant_arguments_fail_while_building(args, words):
    with tf.Graph().as_default(), pytest.raises(ValueError) as caught:
        tf.range(*args)
    assert words in str(caught.value) and "'range'" in str(caught.value)


def test_invalid_fed_arguments_fail_at_run_time_with_the_values():
    def make():
        return tf.range(tf.placeholder(tf.int64, [], name="start"), 2**62)

    graph = tf.Graph()
    with graph.as_default(), tf.device("/cpu:0"):
        y = make()
        with tf.Session() as session, pytest.raises(errors.InvalidArgumentError) as caught:
            session.run(y, {"start:0": -2**62})
    assert "Requires ((limit - start) / delta) <= 9223372036854775807" in caught.value.message
    assert "Hint:" in str(caught.value)
    with tf.Graph().as_default(), tf.Session() as session:
        delta = tf.placeholder(tf.int32, [])
        with pytest.raises(errors.InvalidArgumentError, match="Requires delta != 0: 0"):
            session.run(tf.range(0, 3, delta), {delta: 0})


def test_a_range_larger_than_memory_is_resource_exhausted_before_allocating():
    with pytest.raises(errors.ResourceExhaustedError) as caught:
        _run(lambda: tf.range(tf.placeholder_with_default(tf.constant(2**48, tf.int64), [])))
    message = caught.value.message
    assert "OOM when allocating tensor with shape[281474976710656] and type int64" in message
    assert "range" in message and str(8 * 2**48) in message
