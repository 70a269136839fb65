"""Queue-based input producers (tf.train.input_producer and relatives) with their queue
runners, and the ops they are built from (CountUpTo, RandomShuffle)."""
import numpy as np
import pytest

import tfteach as tf

pytestmark = pytest.mark.timeout(60)
WAIT_MS = 20000


def _drain(sess, fetch):
    """Every value ``fetch`` gives until OutOfRangeError, and that error."""
    values = []
    with pytest.raises(tf.errors.OutOfRangeError) as info:
        while True:
            value = sess.run(fetch, options=tf.RunOptions(timeout_in_ms=WAIT_MS))
            values.append(value.tolist() if hasattr(value, "tolist") else value)
    return values, info.value


def _run_producers(fetch, target=""):
    with tf.Session(target) as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            return _drain(sess, fetch)
        finally:
            coord.request_stop()
            coord.join(threads)


def test_count_up_to_returns_the_value_before_and_stops_at_the_limit():
    v = tf.Variable(0, dtype=tf.int64, name="counter")
    up = v.count_up_to(2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(up), sess.run(up)] == [0, 1]
        with pytest.raises(tf.errors.OutOfRangeError, match="^Reached limit of 2"):
            sess.run(up)


def test_random_shuffle_permutes_the_first_dimension():
    x = tf.random_shuffle(tf.constant([[i, -i] for i in range(20)]), seed=1)
    with tf.Session() as sess:
        out = sess.run(x)
    assert sorted(out.tolist()) == [[i, -i] for i in range(20)]
    assert out.tolist() != [[i, -i] for i in range(20)]


def test_input_producer_gives_the_rows_num_epochs_times_then_out_of_range():
    q = tf.train.input_producer(tf.constant([[1, 2], [3, 4], [5, 6]]), num_epochs=2,
                                shuffle=False, capacity=4)
    values, error = _run_producers(q.dequeue())
    assert values == [[1, 2], [3, 4], [5, 6]] * 2
    assert "is closed and has insufficient elements" in error.message


def test_input_producer_adds_its_queue_runner_and_a_local_epochs_variable():
    q = tf.train.input_producer(tf.constant([1, 2]), num_epochs=1)
    runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert [r.queue for r in runners] == [q]
    assert [v.op.name for v in tf.local_variables()] == ["input_producer/limit_epochs/epochs"]
    assert tf.global_variables() == [] and tf.trainable_variables() == []


def test_shuffled_input_producer_gives_each_row_once_per_epoch():
    q = tf.train.range_input_producer(10, num_epochs=2, seed=4)
    values, _ = _run_producers(q.dequeue())
    assert sorted(values[:10]) == list(range(10)) and sorted(values[10:]) == list(range(10))
    assert values[:10] != list(range(10))


def test_string_input_producer_gives_the_strings():
    q = tf.train.string_input_producer(["a", "b", "c"], num_epochs=1, shuffle=False)
    values, _ = _run_producers(q.dequeue())
    assert values == [b"a", b"b", b"c"]


def test_slice_input_producer_gives_the_same_row_of_each_tensor():
    pair = tf.train.slice_input_producer([tf.constant([1, 2, 3]), tf.constant([10., 20., 30.])],
                                         num_epochs=1, shuffle=False)
    values, _ = _run_producers(pair)
    assert values == [[1, 10.0], [2, 20.0], [3, 30.0]]


def test_string_input_producer_needs_strings():
    with pytest.raises(ValueError, match="requires a non-null input tensor"):
        tf.train.string_input_producer([])


def test_input_producer_needs_a_known_element_shape():
    x = tf.placeholder(tf.float32, [None, None])
    with pytest.raises(ValueError, match="must have a fully defined shape"):
        tf.train.input_producer(x)


def test_num_epochs_must_be_positive():
    with pytest.raises(ValueError, match="num_epochs must be > 0 not 0"):
        tf.train.limit_epochs(tf.constant([1]), 0)


@pytest.mark.cluster
def test_input_producer_on_a_grpc_session_runs_its_runner_beside_the_dequeues(monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    server = tf.train.Server.create_local_server()
    try:
        q = tf.train.input_producer(np.arange(6).reshape(3, 2), num_epochs=2, shuffle=False,
                                    capacity=2)
        values, _ = _run_producers(q.dequeue(), server.target)
    finally:
        server.stop()
    assert values == [[0, 1], [2, 3], [4, 5]] * 2
