"""Conformance of the Session API around run(): the same programs on tfteach and TF compat.v1.

Covers ``Session.make_callable``, tuple feed keys, the errors of bad session targets and of
restoring from a path without a checkpoint, MonitoredTrainingSession creating its
checkpoint directory, ``replica_device_setter`` given a ClusterDef, ``HasField`` on run
metadata and config messages, and the partition graphs of a local two-CPU session.
Messages are compared without tfteach's ``Hint:`` line. Runs only where TensorFlow is
installed (``pip install -e ".[conformance]"``).
"""
from __future__ import annotations

import gc

import numpy as np
import pytest

pytestmark = pytest.mark.conformance

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402
from tfteach.distributed.protocol.cluster_spec import ClusterSpec  # noqa: E402

BOTH = (tfteach, tf1)


@pytest.fixture(autouse=True)
def strict_devices(monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    tf1.reset_default_graph()
    tfteach.reset_default_graph()


def _config(tf, cpus: int = 1):
    cfg = tf.ConfigProto(device_count={"CPU": cpus})
    if tf is tf1:        # no constant folding or other rewrites: partitions show every node
        cfg.graph_options.rewrite_options.disable_meta_optimizer = True
        cfg.graph_options.optimizer_options.opt_level = tf1.OptimizerOptions.L0
        cfg.graph_options.optimizer_options.do_constant_folding = False
    return cfg


def _error(tf, call):
    """(class name, TF's message) of what ``call()`` raises (tfteach's hint left out)."""
    with pytest.raises(Exception) as info:
        call()
    e = info.value
    text = e.message if isinstance(e, tf.errors.OpError) else str(e)
    return type(e).__name__, text.split("\nHint:")[0]


def _both(program):
    return [program(tf) for tf in BOTH]


def _three_placeholders(tf):
    return [tf.placeholder(tf.float32, [], name=n) for n in "abc"]


# ---- make_callable ----------------------------------------------------------------------------
def test_make_callable_with_a_feed_list_matches_tf():
    def program(tf):
        a, b, c = _three_placeholders(tf)
        total = a + b + c
        step = tf.Session().make_callable([total, {"x": total}, (a,)], feed_list=[a, "b:0", c])
        return step(1.0, 2.0, 3.0)
    ours, theirs = _both(program)
    assert ours == theirs == [6.0, {"x": 6.0}, (1.0,)]


def test_make_callable_of_an_op_and_with_options_matches_tf():
    def program(tf):
        v = tf.Variable(2.0, name="v")
        sess = tf.Session()
        init = sess.make_callable(v.initializer)()
        read = sess.make_callable(v * 3.0, accept_options=True)
        md = tf.RunMetadata()
        value = read(options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=md)
        return init, float(value), md.HasField("step_stats")
    ours, theirs = _both(program)
    assert ours == theirs == (None, 6.0, True)


def test_make_callable_errors_match_tf():
    def program(tf):
        a, _, _ = _three_placeholders(tf)
        sess = tf.Session()
        not_a_list = _error(tf, lambda: sess.make_callable(a, feed_list=a))
        step = sess.make_callable(a * 2.0, feed_list=[a])
        plain = sess.make_callable(tf.constant(1.0))
        sess.close()
        return not_a_list[0], _error(tf, lambda: step(1.0)), _error(tf, plain)
    ours, theirs = _both(program)
    assert ours == theirs


# ---- tuple feed keys --------------------------------------------------------------------------
def test_tuple_and_nested_tuple_feed_keys_match_tf():
    def program(tf):
        a, b, c = _three_placeholders(tf)
        sess = tf.Session()
        return (sess.run(a + b + c, feed_dict={(a, b): (1.0, 2.0), c: 3.0}),
                sess.run([a, b, c], feed_dict={((a, b), c): ((1.0, 2.0), 3.0)}),
                sess.run(a - b, feed_dict={(a, b): {"y": 1.0, "x": 4.0}}))
    ours, theirs = _both(program)
    assert ours == theirs


def test_tuple_feed_key_errors_match_tf():
    def program(tf):
        a, b, _ = _three_placeholders(tf)
        sess = tf.Session()
        return (_error(tf, lambda: sess.run(a + b, {(a, b): np.array([1.0, 2.0])})),
                _error(tf, lambda: sess.run(a + b, {(a, b): ([1.0], [2.0, 3.0])})),
                _error(tf, lambda: sess.run(a + b, {(a, b): (1.0, 2.0), a: 3.0})))
    ours, theirs = _both(program)
    assert ours == theirs


# ---- errors of targets and restores --------------------------------------------------------------
def test_an_unknown_target_is_not_found_error_as_in_tf():
    def program(tf):
        tf.constant(1.0)
        return _error(tf, lambda: tf.Session("some-unknown-target"))
    (ours_cls, ours), (theirs_cls, theirs) = _both(program)
    assert ours_cls == theirs_cls == "NotFoundError"
    head = ('No session factory registered for the given session options: '
            '{target: "some-unknown-target"')
    tail = "Registered factories are {GRPC_SESSION, DIRECT_SESSION}."
    assert ours.startswith(head) and theirs.startswith(head)
    assert ours.endswith(tail) and theirs.endswith(tail)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_target_type_errors_match_tf():
    """(TF's half-made Session then fails in ``__del__``; that warning is ignored.)"""
    def program(tf):
        return _error(tf, lambda: tf.Session(37)), _error(tf, lambda: tf.Session(tf.ConfigProto()))
    ours, theirs = _both(program)
    gc.collect()
    assert ours == theirs


def test_restore_from_a_path_without_checkpoint_matches_tf(tmp_path):
    def program(tf):
        tf.Variable(1.0, name="v")
        saver = tf.train.Saver()
        with tf.Session() as sess:
            return _error(tf, lambda: saver.restore(sess, str(tmp_path / "nothing-here")))
    ours, theirs = _both(program)
    assert ours == theirs


# ---- training helpers ----------------------------------------------------------------------------
def test_monitored_training_session_saves_into_a_fresh_nested_dir_as_tf(tmp_path):
    def program(tf):
        tf.reset_default_graph()
        inc = tf.assign_add(tf.train.get_or_create_global_step(), 1)
        checkpoint_dir = tmp_path / tf.__name__ / "runs" / "a"
        with tf.train.MonitoredTrainingSession(checkpoint_dir=str(checkpoint_dir),
                                               save_checkpoint_steps=1) as sess:
            sess.run(inc)
            sess.run(inc)
        return tf.train.latest_checkpoint(str(checkpoint_dir)).rsplit("/", 1)[1]
    ours, theirs = _both(program)
    assert ours == theirs == "model.ckpt-2"


def test_replica_device_setter_takes_a_cluster_def_as_tf():
    jobs = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]}

    def program(tf, cluster_def):
        with tf.device(tf.train.replica_device_setter(cluster=cluster_def)):
            v1, v2 = tf.Variable(1.0), tf.Variable(2.0)
            total = v1 + v2
        return [v1.device, v2.device, total.device]
    ours = program(tfteach, ClusterSpec(jobs).as_cluster_def())
    theirs = program(tf1, tf1.train.ClusterSpec(jobs).as_cluster_def())
    assert ours == theirs


# ---- run metadata -------------------------------------------------------------------------------
def _two_device_program(tf):
    """a (cpu:0) and a fed p go to b on cpu:1; b comes back to c and s on cpu:0."""
    with tf.device("/cpu:0"):
        a = tf.constant([1.0, 2.0], name="a")
        p = tf.placeholder(tf.float32, [2], name="p")
    with tf.device("/cpu:1"):
        b = tf.multiply(a, p, name="b")
    with tf.device("/cpu:0"):
        c = tf.multiply(b, 3.0, name="c")
        s = tf.reduce_sum(c, name="s")
    return tf.Session(config=_config(tf, cpus=2)), s, {p: [1.0, 1.0]}


def test_has_field_answers_match_tf():
    def program(tf):
        sess, s, feeds = _two_device_program(tf)
        md = tf.RunMetadata()
        answers = [md.HasField("step_stats")]
        for options in (None, tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                        tf.RunOptions(output_partition_graphs=True)):
            sess.run(s, feeds, options=options, run_metadata=md)
            answers.append((md.HasField("step_stats"), len(md.partition_graphs)))
        config = tf.ConfigProto()
        answers.append(config.HasField("gpu_options"))
        config.gpu_options.allow_growth = True
        answers.append(config.HasField("gpu_options"))
        return answers
    ours, theirs = _both(program)
    assert ours == theirs == [False, (False, 0), (True, 0), (False, 2), False, True]


def test_has_field_errors_match_tf():
    def program(tf):
        md = tf.RunMetadata()
        return (_error(tf, lambda: md.HasField("partition_graphs")),
                _error(tf, lambda: md.HasField("nope")),
                _error(tf, lambda: tf.RunOptions().HasField("trace_level")))
    ours, theirs = _both(program)
    assert ours == theirs


def test_partition_graphs_of_a_two_cpu_session_match_tf():
    """Every node TF puts in the two partitions, with its op, device and inputs: the ops,
    ``_Send``/``_Recv`` pairs numbered as TF numbers them, ``_Arg`` for the feed and
    ``_Retval`` for the fetch. Attrs are not compared: tfteach's ``tensor_name`` edge
    numbers are not TF's graph edge ids, and the ops' attrs differ in encoding."""
    def program(tf):
        sess, s, feeds = _two_device_program(tf)
        md = tf.RunMetadata()
        sess.run(s, feeds, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=md)
        return [{(n.name, n.op, n.device, tuple(n.input)) for n in g.node}
                for g in sorted(md.partition_graphs, key=lambda g: g.node[0].device)]
    ours, theirs = _both(program)
    assert ours == theirs
