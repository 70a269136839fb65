"""TF's error classes built as TF builds them, ``MonitoredSession``'s recovery from
AbortedError and clean exit on OutOfRangeError, and the session's argument errors, each run
on tfteach and on TensorFlow's ``compat.v1``."""
import pytest

import tfteach
from tf_oracle import tf1

pytestmark = pytest.mark.conformance
BOTH = pytest.mark.parametrize("tf", [tfteach, tf1], ids=["tfteach", "tensorflow"])


@BOTH
def test_error_classes_take_tfs_node_def_op_message(tf):
    err = tf.errors.AbortedError(None, None, "Abort")
    assert (str(err), err.message, err.error_code, err.op, err.node_def) == \
        ("Abort", "Abort", 10, None, None)
    assert err.experimental_payloads == {}
    base = tf.errors.OpError(None, None, "bad", tf.errors.INVALID_ARGUMENT)
    assert (base.message, base.error_code) == ("bad", 3)


@BOTH
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # TF's __del__
def test_a_config_that_is_not_a_configproto_is_a_type_error(tf):
    with pytest.raises(TypeError, match='must be a tf.ConfigProto, but got "int"'):
        tf.Session(config=37)


@BOTH
def test_reset_of_a_target_that_is_no_server_is_not_found(tf):
    with pytest.raises(tf.errors.NotFoundError,
                       match='No session factory registered .*target: "nonexistent"'):
        tf.Session.reset("nonexistent", ["a"])


def _raise_once(tf, at_step, error):
    class RaiseOnce(tf.train.SessionRunHook):
        def __init__(self):
            self.calls, self.raised = 0, False

        def before_run(self, run_context):
            self.calls += 1
            if self.calls == at_step and not self.raised:
                self.raised = True
                raise error
    return RaiseOnce()


def _counting_creator(tf):
    class Counting(tf.train.ChiefSessionCreator):
        created = 0

        def create_session(self):
            Counting.created += 1
            return super().create_session()
    return Counting()


@BOTH
def test_monitored_session_recreates_its_session_after_an_aborted_error(tf):
    with tf.Graph().as_default():
        v = tf.Variable(10, name="v")
        bump = tf.assign_add(v, 1)
        creator = _counting_creator(tf)
        hook = _raise_once(tf, 3, tf.errors.AbortedError(None, None, "Abort"))
        values = []
        with tf.train.MonitoredSession(session_creator=creator, hooks=[hook]) as sess:
            for _ in range(4):
                values.append(sess.run(bump))
    assert (type(creator).created, values) == (2, [11, 12, 11, 12])


@BOTH
def test_monitored_session_stops_cleanly_on_out_of_range(tf):
    with tf.Graph().as_default():
        v = tf.Variable(0, name="v")
        bump = tf.assign_add(v, 1)
        steps = []
        with tf.train.MonitoredSession() as sess:
            while not sess.should_stop():
                steps.append(sess.run(bump))
                if len(steps) == 2:
                    raise tf.errors.OutOfRangeError(None, None, "End of input")
        assert sess.should_stop()
    assert steps == [1, 2]
