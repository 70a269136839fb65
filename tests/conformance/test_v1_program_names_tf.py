"""The names a TF 1.x program's first lines use, as ``tensorflow.compat.v1`` has them:
``disable_v2_behavior``, ``disable_eager_execution``, ``executing_eagerly``, ``tf.logging``,
``to_int32`` and friends, ``arg_max``/``arg_min``, ``tables_initializer``; a script that
turns INFO logging on sees its hook's loss lines on both, run as a process as learners run
it."""
import subprocess
import sys
import textwrap

import pytest
from tf_oracle import assert_built_as_tf, tf1

import tfteach as tf
from tfteach import errors

pytestmark = pytest.mark.conformance


def test_the_mode_switches_leave_graph_mode_on():
    for lib in (tf1, tf):
        lib.disable_v2_behavior()
        lib.disable_eager_execution()
        assert lib.executing_eagerly() is False
    assert tf.compat.v1.disable_v2_behavior is tf.disable_v2_behavior


@pytest.mark.parametrize("switch", ["enable_v2_behavior", "enable_eager_execution",
                                    "enable_v2_tensorshape"])
def test_switching_v2_on_is_refused_with_a_hint(switch):
    with pytest.raises(errors.UnimplementedError, match=switch) as info:
        getattr(tf, switch)()
    assert "tf.Session()" in str(info.value)


def test_casts_and_tables_initializer_are_built_as_tf():
    assert_built_as_tf(lambda lib: [f(lib.constant([1.5, -2.7])) for f in
                                    (lib.to_int32, lib.to_int64, lib.to_double)], tf)
    for lib in (tf1, tf):
        with lib.Graph().as_default():
            init = lib.tables_initializer()
            assert (init.name, init.type) == ("init_all_tables", "NoOp")


def test_logging_levels_and_verbosity_are_tfs():
    names = ("DEBUG", "INFO", "WARN", "ERROR", "FATAL")
    assert [getattr(tf.logging, n) for n in names] == [getattr(tf1.logging, n) for n in names]
    for name in ("set_verbosity", "get_verbosity", "info", "warn", "warning", "error",
                 "debug", "fatal", "log", "log_every_n", "log_first_n", "log_if", "vlog",
                 "flush"):
        assert callable(getattr(tf.logging, name)), name
    before = tf.logging.get_verbosity()
    try:
        tf.logging.set_verbosity(tf.logging.ERROR)
        assert tf.logging.get_verbosity() == tf.logging.ERROR
    finally:
        tf.logging.set_verbosity(before)


SCRIPT = textwrap.dedent("""
    import sys
    if sys.argv[1] == "tf":
        import tensorflow.compat.v1 as tf
    else:
        import tfteach as tf
    tf.disable_v2_behavior()
    tf.logging.set_verbosity(tf.logging.INFO)
    for i in range(5):
        tf.logging.log_every_n(tf.logging.INFO, "every other %d", 2, i)
    tf.logging.info("quiet %s", "before training")
    x = tf.constant([[1.0, 2.0]])
    w = tf.Variable([[0.5], [0.25]])
    loss = tf.reduce_sum(tf.square(tf.matmul(x, w) - 3.0), name="loss")
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=step)
    hook = tf.train.LoggingTensorHook({"loss": loss}, every_n_iter=1)
    with tf.train.MonitoredTrainingSession(hooks=[hook]) as sess:
        for _ in range(3):
            sess.run(train)
""")


@pytest.mark.parametrize("lib", ["tf", "tfteach"])
def test_a_script_with_info_logging_shows_its_hooks_loss_lines(lib, tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(path), lib], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("INFO:")]
    assert sum("loss = " in line for line in lines) == 3, lines
    assert [line.rsplit(":", 1)[1] for line in lines if "every other" in line] == \
        ["every other 0", "every other 2", "every other 4"]
    assert any(line.endswith("quiet before training") for line in lines)


def test_arg_max_and_arg_min_are_built_as_tf():
    def build(lib):
        x = lib.constant([[3.0, 9.0, 1.0], [7.0, 2.0, 8.0]])
        return [lib.arg_max(x, 1), lib.arg_min(x, 0), lib.arg_min(x, 1, lib.int32),
                lib.arg_max(x, dimension=0, output_type=lib.int32, name="best")]
    assert_built_as_tf(build, tf)
