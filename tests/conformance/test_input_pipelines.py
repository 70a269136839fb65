"""Input pipelines against TensorFlow's compat.v1: ``tf.data`` datasets and iterators, queue
readers with ``string_input_producer``, ``decode_csv`` / ``decode_raw``, ``tf.train.batch`` /
``shuffle_batch`` driven by queue runners.

Each pipeline runs on both runtimes until OutOfRangeError and must give TF's elements in TF's
order (shuffles: the same multiset per epoch), with TF's dtypes and static shapes, and end
where TF's ends. A learner's script with queue runners runs as a process and must exit.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
X = np.arange(14, dtype=np.float32).reshape(7, 2)
Y = np.arange(7, dtype=np.int64) * 10


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("pipelines")
    a, b = d / "a.csv", d / "b.csv"
    a.write_bytes(b"id,score,name\n1,0.5,ann\r\n2,,\"b,ob\"\n\n")
    b.write_bytes(b"id,score,name\n3,2.25,cy\n4,-1,dee")
    raw = d / "records.bin"
    records = np.arange(5 * 7, dtype=np.uint8).reshape(5, 7)       # label byte + 3 int16
    raw.write_bytes(b"HDR" + records.tobytes() + b"FT")
    return {"csv": [str(a), str(b)], "raw": str(raw)}


def _drain(sess, fetch, feed=None, limit: int = 100) -> list:
    out = []
    for _ in range(limit):
        try:
            out.append(sess.run(fetch, feed))
        except (tfteach.errors.OutOfRangeError, tf1.errors.OutOfRangeError):
            return out
    raise AssertionError(f"no OutOfRangeError after {limit} elements")


def _static(t) -> tuple:
    return t.dtype.name, (t.shape.as_list() if t.shape.ndims is not None else None)


def _leaves(element) -> list:
    if isinstance(element, dict):
        return [x for k in sorted(element) for x in _leaves(element[k])]
    if isinstance(element, (tuple, list)):
        return [x for e in element for x in _leaves(e)]
    return [element]


def _dataset_run(mod, build) -> tuple[list, list]:
    with mod.Graph().as_default():
        element = build(mod).make_one_shot_iterator().get_next()
        flat = _leaves(element)
        with mod.Session() as sess:
            return [_static(t) for t in flat], _drain(sess, element)


def _same(ours, theirs) -> None:
    if isinstance(theirs, dict):
        assert sorted(ours) == sorted(theirs)
        for k in theirs:
            _same(ours[k], theirs[k])
    elif isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs, strict=True):
            _same(o, t)
    else:
        o, t = np.asarray(ours), np.asarray(theirs)
        assert o.dtype == t.dtype and o.shape == t.shape, (o, t)
        assert o.tolist() == t.tolist()


DATASETS = {
    "slices_map_batch": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).map(
        lambda x, y: (x * 2.0, y + 1)).batch(3),
    "dict_elements": lambda tf: tf.data.Dataset.from_tensor_slices(
        {"x": X, "y": Y}).map(lambda e: {"sum": tf.reduce_sum(e["x"]), "y": e["y"]}),
    "map_list_to_tuple": lambda tf: tf.data.Dataset.from_tensor_slices(Y).map(
        lambda y: [y, tf.cast(y, tf.float32) / 4.0]),
    "range_repeat_drop": lambda tf: tf.data.Dataset.range(1, 10, 3).repeat(3).batch(
        4, drop_remainder=True),
    "range_take_skip": lambda tf: tf.data.Dataset.range(20).skip(3).take(5).prefetch(2),
    "filter": lambda tf: tf.data.Dataset.range(10).filter(lambda i: tf.equal(tf.floormod(i, 3), 0)),
    "from_tensors": lambda tf: tf.data.Dataset.from_tensors(X).repeat(2),
    "captured_constant": lambda tf: _captured(tf),
    "shard": lambda tf: tf.data.Dataset.range(10).shard(3, 1).map(
        lambda i: i * 2, num_parallel_calls=tf.data.experimental.AUTOTUNE),
    "zip_tuple": lambda tf: tf.data.Dataset.zip((tf.data.Dataset.range(4),
                                                 tf.data.Dataset.from_tensor_slices((X, Y)))),
    "zip_dict": lambda tf: tf.data.Dataset.zip({"b": tf.data.Dataset.range(3),
                                                "a": tf.data.Dataset.from_tensor_slices(X)}),
    "concatenate": lambda tf: tf.data.Dataset.from_tensor_slices(X[:2]).concatenate(
        tf.data.Dataset.from_tensor_slices(X[4:])).batch(3),
    "cache_repeat": lambda tf: tf.data.Dataset.range(3).cache().repeat(2),
    "padded_to_largest": lambda tf: _ragged(tf).padded_batch(3, padded_shapes=[None]),
    "padded_fixed_values": lambda tf: _ragged(tf).map(lambda v: (v, tf.size(v))).padded_batch(
        2, padded_shapes=([6], []), padding_values=(tf.constant(-1, tf.int64), 0),
        drop_remainder=True),
    "from_generator": lambda tf: tf.data.Dataset.from_generator(
        _pairs, (tf.int64, tf.float32), ([], [2])).batch(3),
    "from_generator_args": lambda tf: tf.data.Dataset.from_generator(
        lambda n: iter(range(int(n))), tf.int32, args=(tf.constant(3),)),
    "flat_map_rows": lambda tf: tf.data.Dataset.from_tensor_slices((X, Y)).flat_map(
        lambda x, y: tf.data.Dataset.from_tensor_slices(x).map(lambda v: (v, y))).batch(4),
    "flat_map_repeat": lambda tf: tf.data.Dataset.range(1, 5).flat_map(
        lambda n: tf.data.Dataset.from_tensors(n).repeat(n)),
    "interleave_2_by_2": lambda tf: tf.data.Dataset.range(1, 6).interleave(
        lambda n: tf.data.Dataset.from_tensors(n).repeat(n), cycle_length=2, block_length=2),
    "interleave_3_by_4": lambda tf: tf.data.Dataset.range(1, 6).interleave(
        lambda n: tf.data.Dataset.from_tensors(n).repeat(6), cycle_length=3, block_length=4),
    "interleave_captured": lambda tf: _interleave_captured(tf),
}


def _interleave_captured(tf):
    offset = tf.constant(100, tf.int64)
    return tf.data.Dataset.from_tensor_slices(Y).interleave(
        lambda y: tf.data.Dataset.range(y // 10).map(lambda i: i + y + offset), cycle_length=4)


@pytest.mark.parametrize("lengths, match", [((0, 1), "cycle_length must be greater than zero"),
                                            ((2, 0), "block_length must be greater than zero")])
def test_interleave_lengths_below_one_fail_as_in_tf(lengths, match) -> None:
    def build(tf):
        return tf.data.Dataset.range(3).interleave(lambda i: tf.data.Dataset.range(i), *lengths)
    for mod in (tfteach, tf1):
        with pytest.raises(mod.errors.InvalidArgumentError, match=match):
            _dataset_run(mod, build)


def _ragged(tf):
    return tf.data.Dataset.range(1, 6).map(lambda n: tf.fill(tf.expand_dims(n, 0), n))


def _pairs():
    for i in range(4):
        yield i, [i / 2.0, -i]


def test_a_generator_of_the_wrong_shape_fails_as_in_tf() -> None:
    def build(tf):
        return tf.data.Dataset.from_generator(lambda: iter([[1, 2], [1, 2, 3]]), tf.int64, [2])
    for mod in (tfteach, tf1):
        with pytest.raises(mod.errors.InvalidArgumentError,
                           match=r"yielded an element of shape \(3,\) where an element of "
                                 r"shape \(2,\) was expected"):
            _dataset_run(mod, build)


def _captured(tf):
    offset = tf.constant(100, tf.int64)
    return tf.data.Dataset.range(3).map(lambda i: i + offset)


@pytest.mark.parametrize("case", sorted(DATASETS))
def test_dataset_gives_tf_elements_then_out_of_range(case: str) -> None:
    ours, theirs = _dataset_run(tfteach, DATASETS[case]), _dataset_run(tf1, DATASETS[case])
    assert ours[0] == theirs[0]
    _same(ours[1], theirs[1])


def test_text_line_dataset_with_decode_csv_matches_tf(files) -> None:
    def build(tf):
        return tf.data.TextLineDataset(files["csv"]).skip(1).filter(
            lambda line: tf.not_equal(line, "")).map(
            lambda line: tuple(tf.decode_csv(line, [[0], [-9.0], ["?"]])))
    with pytest.raises(tf1.errors.InvalidArgumentError):    # b.csv's header is not an int
        _dataset_run(tf1, build)
    with pytest.raises(tfteach.errors.InvalidArgumentError):
        _dataset_run(tfteach, build)

    def lines(tf):
        return tf.data.TextLineDataset(files["csv"])
    _same(_dataset_run(tfteach, lines), _dataset_run(tf1, lines))


def test_shuffle_gives_each_epoch_once_and_repeats_with_a_seed() -> None:
    def build(tf):
        return tf.data.Dataset.range(12).shuffle(5, seed=9).repeat(2)
    for mod in (tfteach, tf1):
        got = [int(v) for v in _dataset_run(mod, build)[1]]
        assert sorted(got[:12]) == sorted(got[12:]) == list(range(12))
        assert got != sorted(got)
    assert _dataset_run(tfteach, build)[1] == _dataset_run(tfteach, build)[1]


def _initializable(mod) -> dict:
    with mod.Graph().as_default():
        p = mod.placeholder(mod.int64, [None])
        it = mod.data.make_initializable_iterator(
            mod.data.Dataset.from_tensor_slices(p).map(lambda v: v * v))
        nxt = it.get_next()
        out = {"static": _static(nxt)}
        with mod.Session() as sess:
            with pytest.raises(mod.errors.FailedPreconditionError, match="not been initialized"):
                sess.run(nxt)
            sess.run(it.initializer, {p: [1, 2, 3]})
            out["first"] = _drain(sess, nxt)
            sess.run(it.initializer, {p: [5]})
            out["second"] = _drain(sess, nxt)
        with pytest.raises(ValueError, match="Cannot capture a placeholder"):
            mod.data.make_one_shot_iterator(mod.data.Dataset.from_tensor_slices(p))
    return out


def test_initializable_iterator_restarts_with_new_feeds_as_in_tf() -> None:
    ours, theirs = _initializable(tfteach), _initializable(tf1)
    assert ours["static"] == theirs["static"]
    _same(ours["first"], theirs["first"])
    _same(ours["second"], theirs["second"])


def _feedable(mod) -> list:
    with mod.Graph().as_default():
        train = mod.data.Dataset.range(100).make_one_shot_iterator()
        valid = mod.data.Dataset.range(3).map(lambda i: -i).make_initializable_iterator()
        handle = mod.placeholder(mod.string, [])
        it = mod.data.Iterator.from_string_handle(handle, train.output_types,
                                                  train.output_shapes)
        nxt = it.get_next()
        with mod.Session() as sess:
            th, vh = sess.run([train.string_handle(), valid.string_handle()])
            sess.run(valid.initializer)
            got = [sess.run(nxt, {handle: th}) for _ in range(2)]
            got += _drain(sess, nxt, {handle: vh})
            got += [sess.run(nxt, {handle: th})]
    return [_static(nxt)] + got


def test_a_feedable_iterator_switches_between_iterators_as_in_tf() -> None:
    ours, theirs = _feedable(tfteach), _feedable(tf1)
    assert ours[0] == theirs[0]
    _same(ours[1:], theirs[1:])


def _monitored(mod) -> int:
    with mod.Graph().as_default():
        mod.train.get_or_create_global_step()
        nxt = mod.data.make_one_shot_iterator(mod.data.Dataset.range(5).batch(2)).get_next()
        runs = 0
        with mod.train.MonitoredTrainingSession() as sess:
            while not sess.should_stop():
                sess.run(nxt)
                runs += 1
        return runs


def test_monitored_training_session_stops_at_the_end_of_a_dataset() -> None:
    assert _monitored(tfteach) == _monitored(tf1) == 3


def _reader_pipeline(mod, files: dict) -> dict:
    with mod.Graph().as_default():
        names = mod.train.string_input_producer(files["csv"], num_epochs=1, shuffle=False)
        key, value = mod.TextLineReader(skip_header_lines=1).read(names)
        q2 = mod.train.string_input_producer([files["raw"]], num_epochs=2, shuffle=False)
        rkey, record = mod.FixedLengthRecordReader(7, header_bytes=3, footer_bytes=2).read(q2)
        label = mod.cast(mod.slice(mod.decode_raw(record, mod.uint8), [0], [1]), mod.int32)
        body = mod.slice(mod.decode_raw(record, mod.uint8), [1], [6])
        out = {"static": [_static(t) for t in (key, value, label, body)]}
        with mod.Session() as sess:
            sess.run(mod.local_variables_initializer())
            coord = mod.train.Coordinator()
            threads = mod.train.start_queue_runners(sess, coord)
            out["lines"] = _drain(sess, [key, value])
            out["records"] = _drain(sess, [rkey, label, body])
            coord.request_stop()
            coord.join(threads)
    return out


def test_readers_give_tf_keys_and_records(files) -> None:
    ours, theirs = _reader_pipeline(tfteach, files), _reader_pipeline(tf1, files)
    assert ours["static"] == theirs["static"]
    _same(ours["lines"], theirs["lines"])
    _same(ours["records"], theirs["records"])


def _batches(mod, files: dict, shuffle: bool) -> dict:
    with mod.Graph().as_default():
        names = mod.train.string_input_producer(files["csv"][1:], num_epochs=3, shuffle=False)
        _, value = mod.TextLineReader(skip_header_lines=1).read(names)
        ident, score, name = mod.decode_csv(value, [[0], [0.0], [""]])
        if shuffle:
            batch = mod.train.shuffle_batch([ident, score, name], 4, capacity=20,
                                            min_after_dequeue=2, seed=3,
                                            allow_smaller_final_batch=True)
        else:
            batch = mod.train.batch({"id": ident, "score": score}, 4,
                                    allow_smaller_final_batch=True)
        flat = list(batch.values()) if isinstance(batch, dict) else batch
        out = {"static": [_static(t) for t in flat],
               "summaries": [t.name for t in mod.get_collection(mod.GraphKeys.SUMMARIES)]}
        merged = mod.summary.merge_all()
        with mod.Session() as sess:
            sess.run(mod.local_variables_initializer())
            coord = mod.train.Coordinator()
            threads = mod.train.start_queue_runners(sess, coord)
            out["batches"] = _drain(sess, batch)
            assert sess.run(merged)
            coord.request_stop()
            coord.join(threads)
    return out


def test_train_batch_gives_tf_batches_and_a_smaller_last_one(files) -> None:
    ours, theirs = _batches(tfteach, files, False), _batches(tf1, files, False)
    assert ours["static"] == theirs["static"]
    assert ours["summaries"] == theirs["summaries"]
    _same(ours["batches"], theirs["batches"])


def test_shuffle_batch_gives_every_element_once_per_epoch(files) -> None:
    ours, theirs = _batches(tfteach, files, True), _batches(tf1, files, True)
    assert ours["static"] == theirs["static"]
    assert ours["summaries"] == theirs["summaries"]
    assert [len(b[0]) for b in ours["batches"]] == [len(b[0]) for b in theirs["batches"]]

    def rows(batches):
        return sorted((int(i), float(s), bytes(n)) for b in batches
                      for i, s, n in zip(*b, strict=True))
    assert rows(ours["batches"]) == rows(theirs["batches"])


@pytest.mark.parametrize("record, defaults, match", [
    ("1,,x", [[0], [], [""]], "Field 1 is required but missing in record 0"),
    ("1,a,x", [[0], [0], [""]], "Field 1 in record 0 is not a valid int32: a"),
    ("1,2", [[0], [0], [""]], "Expect 3 fields but have 2 in record 0"),
])
def test_decode_csv_errors_match_tf(record: str, defaults: list, match: str) -> None:
    for mod in (tfteach, tf1):
        with mod.Graph().as_default(), mod.Session() as sess:
            defs = [d if d else mod.constant([], mod.float32) for d in defaults]
            with pytest.raises(mod.errors.InvalidArgumentError, match=match):
                sess.run(mod.decode_csv(record, defs))


def test_decode_raw_matches_tf() -> None:
    data = np.arange(12, dtype=np.uint8).tobytes()
    results = []
    for mod in (tfteach, tf1):
        with mod.Graph().as_default(), mod.Session() as sess:
            batch = mod.constant([data, data[::-1]])
            tensors = [mod.decode_raw(batch, mod.int16), mod.decode_raw(data, mod.int32,
                                                                       little_endian=False),
                       mod.decode_raw(batch, mod.float32)]
            results.append(([_static(t) for t in tensors], sess.run(tensors)))
            with pytest.raises(mod.errors.InvalidArgumentError, match="not a multiple of 8"):
                sess.run(mod.decode_raw(data[:10], mod.float64))
    assert results[0][0] == results[1][0]
    for o, t in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_array_equal(o, t)


SCRIPT = """
import sys
import tfteach as tf

names = tf.train.string_input_producer([sys.argv[1]], shuffle=False)   # no num_epochs: forever
_, line = tf.TextLineReader(skip_header_lines=1).read(names)
ident, score, name = tf.decode_csv(line, [[0], [0.0], [""]])
batch = tf.train.shuffle_batch([ident, score], 3, capacity=10, min_after_dequeue=3)
sess = tf.Session()
coord = tf.train.Coordinator()
threads = tf.train.start_queue_runners(sess, coord)
for _ in range(4):
    print(sess.run(batch)[0].tolist())
coord.request_stop()
coord.join(threads)
finite = tf.train.batch([ident], 2, num_threads=2)
tf.train.start_queue_runners(sess)      # never stopped: the script just ends
print(sess.run(finite).tolist())
print("done")
"""


def test_a_script_with_queue_runners_exits(files, tmp_path) -> None:
    script = tmp_path / "learner.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run([sys.executable, str(script), files["csv"][1]], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[-2] == "done" and len(lines) == 7
    assert all(set(eval(x)) <= {3, 4} for x in lines[:5])     # noqa: S307 - our own output
