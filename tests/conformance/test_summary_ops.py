"""``tf.summary`` ops against TensorFlow's compat.v1: the serialized ``Summary`` of scalar,
histogram (TF's buckets), image (the PNGs' pixels), text and merge; op types, names, tags
and collections; and event files that TF's reader and TensorBoard's ``EventAccumulator``
read back with the right tags, steps and values.

Runs only where TensorFlow is installed; otherwise the whole module skips. The
EventAccumulator test also needs the ``tensorboard`` package.
"""
from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach
from tensorflow.core.framework import summary_pb2

RNG = np.random.default_rng(11)
VALUES = {
    "normal": RNG.normal(size=200).astype(np.float32) * 5,
    "with_zeros": np.array([0.0, 0.0, 1e-13, -3e-12, 7.0], np.float32),
    "huge": np.array([-1e25, 3e21, 2.5], np.float64),
    "one": np.array([42.0], np.float32),
}
IMAGES = {
    "float_positive": RNG.uniform(0, 3, size=(3, 4, 5, 3)).astype(np.float32),
    "float_signed": RNG.normal(size=(2, 3, 2, 1)).astype(np.float32),
    "float_non_finite": np.array([[[[np.nan, 1, 2]], [[0.5, 0.25, np.inf]]]], np.float32),
    "uint8_rgba": RNG.integers(0, 256, size=(2, 2, 3, 4)).astype(np.uint8),
}


def build_summaries(tf):
    """Every kind of summary of a small graph: {key: tensor}."""
    out = {}
    with tf.name_scope("train"):
        out["scalar"] = tf.summary.scalar("loss", tf.constant(0.25) * 3.0)
        out["family"] = tf.summary.scalar("lr", tf.constant(0.1), family="opt")
        out["clean"] = tf.summary.scalar("bad name:1", tf.constant(2, tf.int32))
        for key, values in VALUES.items():
            out["h_" + key] = tf.summary.histogram(key, tf.constant(values))
    for key, images in IMAGES.items():
        out["i_" + key] = tf.summary.image(key, tf.constant(images),
                                           max_outputs=1 if key == "uint8_rgba" else 2)
    out["text"] = tf.summary.text("note", tf.constant(["hello", "wörld"]))
    out["merge"] = tf.summary.merge([out["scalar"], out["h_one"]], name="picked")
    out["merge_all"] = tf.summary.merge_all()
    return out


def run_summaries(tf):
    with tf.Graph().as_default():
        summaries = build_summaries(tf)
        facts = {k: (t.op.type, t.name, [i.name for i in t.op.inputs])
                 for k, t in summaries.items()}
        collected = [t.name for t in tf.get_collection(tf.GraphKeys.SUMMARIES)]
        with tf.Session() as sess:
            values = sess.run(summaries)
        return {k: summary_pb2.Summary.FromString(v) for k, v in values.items()}, facts, \
            collected


def decoded(summary):
    """The PNGs of a Summary as pixel arrays, decoded by TensorFlow."""
    with tf1.Graph().as_default(), tf1.Session() as sess:
        return [sess.run(tf1.image.decode_png(v.image.encoded_image_string, channels=0))
                for v in summary.value]


@pytest.fixture(scope="module")
def both():
    return run_summaries(tfteach), run_summaries(tf1)


def test_ops_names_inputs_and_collection_match_tensorflow(both):
    (_, our_facts, our_collected), (_, their_facts, their_collected) = both
    assert our_facts == their_facts
    assert our_collected == their_collected


@pytest.mark.parametrize("key", ["scalar", "family", "clean", "text", "merge"]
                         + ["h_" + k for k in VALUES])
def test_summaries_equal_tensorflows(both, key):
    ours, theirs = both[0][0][key], both[1][0][key]
    assert ours == theirs
    assert len(ours.value) >= 1


@pytest.mark.parametrize("key", ["i_" + k for k in IMAGES])
def test_images_have_tensorflows_tags_sizes_and_pixels(both, key):
    ours, theirs = both[0][0][key], both[1][0][key]
    strip = [(v.tag, v.image.height, v.image.width, v.image.colorspace) for v in ours.value]
    assert strip == [(v.tag, v.image.height, v.image.width, v.image.colorspace)
                     for v in theirs.value]
    for a, b in zip(decoded(ours), decoded(theirs), strict=True):
        np.testing.assert_array_equal(a, b)


def test_merge_all_holds_every_value_once(both):
    ours, theirs = both[0][0]["merge_all"], both[1][0]["merge_all"]
    assert [v.tag for v in ours.value] == [v.tag for v in theirs.value]
    assert sorted(v.SerializeToString() for v in ours.value if not v.HasField("image")) == \
        sorted(v.SerializeToString() for v in theirs.value if not v.HasField("image"))


def test_a_repeated_tag_fails_when_merged():
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            a = tf.summary.scalar("x", tf.constant(1.0), collections=[])
            merged = tf.summary.merge([a, a])
            assert tf.summary.merge_all() is None        # collections=[]: none collected
            with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                                     match="Duplicate tag x found"):
                sess.run(merged)


@pytest.mark.parametrize("bad", ["vector scalar", "nan histogram"])
def test_bad_values_fail_as_in_tensorflow(bad):
    messages = []
    for tf in (tfteach, tf1):
        with tf.Graph().as_default():
            op = (tf.summary.scalar("x", tf.constant([1.0, 2.0])) if bad == "vector scalar"
                  else tf.summary.histogram("h", tf.constant([1.0, np.nan])))
            with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
                sess.run(op)
            messages.append(str(info.value))
    first_line = next(line for line in messages[1].splitlines()
                      if line.startswith(("tags and", "Nan in")))
    assert messages[0].startswith(first_line)


def write_events(logdir):
    """Three steps of a scalar, a histogram and an image through tfteach's FileWriter."""
    tf = tfteach
    with tf.Graph().as_default():
        step = tf.placeholder(tf.float32, [])
        tf.summary.scalar("loss", 1.0 / (step + 1.0))
        tf.summary.histogram("weights", tf.constant(VALUES["normal"]) * step)
        tf.summary.image("digits", tf.constant(IMAGES["float_positive"]) * (step + 1.0))
        merged = tf.summary.merge_all()
        with tf.Session() as sess:
            writer = tf.summary.FileWriter(logdir, sess.graph)
            for s in range(3):
                writer.add_summary(sess.run(merged, {step: s}), global_step=s)
            writer.flush()
            writer.close()
        return writer.path


def test_event_files_read_back_with_tensorflows_reader(tmp_path):
    path = write_events(str(tmp_path))
    events = list(tf1.train.summary_iterator(path))         # checks TFRecord CRCs
    assert events[0].file_version == "brain.Event:2" and events[1].graph_def
    steps = [(e.step, [v.tag for v in e.summary.value]) for e in events[2:]]
    images = [f"digits/image/{i}" for i in range(3)]        # max_outputs=3 of 3
    assert steps == [(s, ["loss", "weights", *images]) for s in range(3)]
    np.testing.assert_allclose([e.summary.value[0].simple_value for e in events[2:]],
                               [1.0, 0.5, 1 / 3], rtol=1e-6)


def test_tensorboard_reads_scalars_histograms_and_images(tmp_path):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    write_events(str(tmp_path))
    acc = event_accumulator.EventAccumulator(str(tmp_path), size_guidance={
        event_accumulator.IMAGES: 0, event_accumulator.HISTOGRAMS: 0})
    acc.Reload()
    tags = acc.Tags()
    assert tags["scalars"] == ["loss"] and tags["histograms"] == ["weights"]
    assert sorted(tags["images"]) == [f"digits/image/{i}" for i in range(3)] and tags["graph"]
    scalars = acc.Scalars("loss")
    assert [s.step for s in scalars] == [0, 1, 2]
    np.testing.assert_allclose([s.value for s in scalars], [1.0, 0.5, 1 / 3], rtol=1e-6)
    assert [h.step for h in acc.Histograms("weights")] == [0, 1, 2]
    histo = acc.Histograms("weights")[2].histogram_value
    assert histo.num == VALUES["normal"].size
    np.testing.assert_allclose([histo.min, histo.max, histo.sum],
                               [VALUES["normal"].min() * 2, VALUES["normal"].max() * 2,
                                VALUES["normal"].astype(np.float64).sum() * 2], rtol=1e-5)
    images = acc.Images("digits/image/1")
    assert [(i.step, i.width, i.height) for i in images] == [(0, 5, 4), (1, 5, 4), (2, 5, 4)]
