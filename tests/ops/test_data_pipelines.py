"""Input pipelines on tfteach's own runtime: what the TF comparison cannot show.

Readers and shuffle queues wait without holding a device thread and give up at a step's
deadline without losing their place; an iterator serves concurrent ``get_next`` calls each
element once; random ops inside ``Dataset.map`` draw per element, seeded; a dataset's map
function travels with the graph to a gRPC task.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest

import tfteach as tf


def _timeout(ms: int) -> tf.RunOptions:
    return tf.RunOptions(timeout_in_ms=ms)


def test_a_reader_waiting_for_a_file_name_times_out_and_reads_on_later(tmp_path) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"first\nsecond\n")
    names = tf.FIFOQueue(4, tf.string)
    key, value = tf.TextLineReader().read(names)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError, match="Timed out waiting"):
            sess.run(value, options=_timeout(100))
        sess.run(names.enqueue(str(path)))
        assert sess.run([key, value]) == [f"{path}:1".encode(), b"first"]
        assert sess.run(value) == b"second"
        sess.run(names.close())
        with pytest.raises(tf.errors.OutOfRangeError, match="is closed and has insufficient"):
            sess.run(value)


def test_a_reader_names_a_missing_file() -> None:
    names = tf.FIFOQueue(4, tf.string)
    _, value = tf.FixedLengthRecordReader(4).read(names)
    with tf.Session() as sess:
        sess.run(names.enqueue("/no/such/file.bin"))
        with pytest.raises(tf.errors.NotFoundError, match="/no/such/file.bin; No such file"):
            sess.run(value)


def test_a_shuffle_queue_keeps_min_after_dequeue_until_it_is_closed() -> None:
    q = tf.RandomShuffleQueue(10, 3, tf.int32, shapes=[], seed=1)
    with tf.Session() as sess:
        sess.run(q.enqueue_many([np.arange(5, dtype=np.int32)]))
        got = list(sess.run(q.dequeue_many(2)))
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=_timeout(100))
        sess.run(q.close())
        got += list(sess.run(q.dequeue_up_to(10)))
        assert sorted(got) == [0, 1, 2, 3, 4] and got != [0, 1, 2, 3, 4]
        with pytest.raises(tf.errors.OutOfRangeError, match="RandomShuffleQueue"):
            sess.run(q.dequeue_up_to(1))


def test_concurrent_get_next_gives_each_element_once() -> None:
    nxt = tf.data.Dataset.range(200).make_one_shot_iterator().get_next()
    seen: list = []
    with tf.Session() as sess:
        def pull() -> None:
            try:
                while True:
                    seen.append(int(sess.run(nxt)))
            except tf.errors.OutOfRangeError:
                pass
        threads = [threading.Thread(target=pull) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert sorted(seen) == list(range(200))


def _flips(seed: int) -> list:
    with tf.Graph().as_default():
        images = np.arange(24 * 2 * 3, dtype=np.float32).reshape(24, 2, 3, 1)
        ds = tf.data.Dataset.from_tensor_slices(images).map(
            lambda im: tf.image.random_flip_left_right(im, seed=seed)).batch(24)
        with tf.Session() as sess:
            out = sess.run(ds.make_one_shot_iterator().get_next())
    return [bool(np.array_equal(o, i[:, ::-1])) for o, i in zip(out, images, strict=True)]


def test_random_ops_inside_map_draw_per_element_and_follow_the_seed() -> None:
    flips = _flips(seed=5)
    assert 0 < sum(flips) < len(flips)
    assert _flips(seed=5) == flips


def test_a_mapped_dataset_runs_on_a_grpc_task() -> None:
    server = tf.train.Server.create_local_server()
    offset = tf.constant(100, tf.int64)
    nxt = tf.data.Dataset.range(5).map(lambda i: i * 2 + offset).filter(
        lambda v: v < 107).batch(2).make_one_shot_iterator().get_next()
    with tf.Session(server.target) as sess:
        got = [sess.run(nxt).tolist() for _ in range(2)]
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(nxt)
    assert got == [[100, 102], [104, 106]]


def test_flat_map_and_interleave_run_on_a_grpc_task() -> None:
    server = tf.train.Server.create_local_server()
    rows = tf.constant([[1, 2], [3, 4]], tf.int64)
    words = tf.data.Dataset.from_tensor_slices(rows).flat_map(
        lambda row: tf.data.Dataset.from_tensor_slices(row * 10))
    nxt = words.interleave(lambda w: tf.data.Dataset.range(w, w + 2), cycle_length=2,
                           block_length=1).batch(8).make_one_shot_iterator().get_next()
    with tf.Session(server.target) as sess:
        assert sess.run(nxt).tolist() == [10, 20, 11, 21, 30, 40, 31, 41]


def test_flat_map_needs_a_function_that_returns_a_dataset() -> None:
    with pytest.raises(TypeError, match="must return a `Dataset` object"):
        tf.data.Dataset.range(3).flat_map(lambda i: i * 2)
