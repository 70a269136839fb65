"""Session API beyond run(): make_callable, tuple feed keys, and the errors of bad targets."""
import collections

import numpy as np
import pytest

import tfteach as tf


def _sum_of_three():
    a, b, c = (tf.placeholder(tf.float32, [], name=n) for n in "abc")
    return a, b, c, a + b + c


# ---- make_callable ----------------------------------------------------------------------------
def test_make_callable_takes_the_feeds_positionally_and_keeps_the_fetch_structure():
    a, b, c, total = _sum_of_three()
    sess = tf.Session()
    step = sess.make_callable([total, {"x": total}], feed_list=[a, "b:0", c])
    assert step(1.0, 2.0, 3.0) == [6.0, {"x": 6.0}]


def test_make_callable_with_a_feed_list_passes_run_keywords():
    a, b, c, total = _sum_of_three()
    sess = tf.Session()
    md = tf.RunMetadata()
    step = sess.make_callable(total, feed_list=(a, b, c))
    step(1.0, 2.0, 3.0, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
         run_metadata=md)
    assert md.HasField("step_stats")


def test_make_callable_of_an_op_returns_none():
    v = tf.Variable(1.0)
    sess = tf.Session()
    assert sess.make_callable(v.initializer)() is None
    assert sess.run(v) == 1.0


def test_make_callable_without_accept_options_takes_no_arguments():
    x = tf.constant(2.0)
    step = tf.Session().make_callable(x)
    with pytest.raises(TypeError):
        step(tf.RunOptions())


def test_make_callable_with_accept_options_fills_run_metadata():
    x = tf.constant(2.0) * 3.0
    step = tf.Session().make_callable((x,), accept_options=True)
    md = tf.RunMetadata()
    out = step(options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=md)
    assert out == (6.0,)
    assert md.HasField("step_stats")


def test_make_callable_checks_the_fetches_when_made():
    tf.constant(1.0)
    with pytest.raises(ValueError, match="Fetch argument 'nope:0' cannot be interpreted"):
        tf.Session().make_callable("nope:0")


def test_make_callable_rejects_a_feed_list_that_is_not_a_list():
    a, _, _, total = _sum_of_three()
    with pytest.raises(TypeError, match="Argument `feed_list` must be a list or tuple"):
        tf.Session().make_callable(total, feed_list=a)


def test_callable_of_a_closed_session_is_cancelled_error():
    step_sess = tf.Session()
    step = step_sess.make_callable(tf.constant(1.0))
    step_sess.close()
    with pytest.raises(tf.errors.CancelledError, match="Session has been closed."):
        step()


# ---- tuple feed keys --------------------------------------------------------------------------
def test_a_tuple_key_feeds_each_tensor_from_the_value():
    a, b, c, total = _sum_of_three()
    assert tf.Session().run(total, feed_dict={(a, b): (1.0, 2.0), c: 3.0}) == 6.0


def test_a_nested_tuple_key_feeds_the_leaves_in_order():
    a, b, c, _ = _sum_of_three()
    out = tf.Session().run([a, b, c], feed_dict={((a, b), c): ((1.0, 2.0), 3.0)})
    assert out == [1.0, 2.0, 3.0]


def test_a_namedtuple_key_takes_a_list_value():
    a, b, _, _ = _sum_of_three()
    pair = collections.namedtuple("Pair", "x y")
    assert tf.Session().run(a - b, feed_dict={pair(a, b): [5.0, 2.0]}) == 3.0


def test_a_tuple_key_takes_numpy_arrays_as_leaves():
    a = tf.placeholder(tf.float32, [2])
    b = tf.placeholder(tf.float32, [2])
    out = tf.Session().run(a + b, feed_dict={(a, b): (np.ones(2), np.arange(2.0))})
    assert out.tolist() == [1.0, 2.0]


def test_a_tuple_key_with_another_number_of_values_is_value_error():
    a, b, _, _ = _sum_of_three()
    with pytest.raises(ValueError, match=r"Could not flatten dictionary. Key had 2 elements, "
                                         r"but value had 1 elements.[\s\S]*Hint:"):
        tf.Session().run(a + b, feed_dict={(a, b): np.array([1.0, 2.0])})


def test_a_tensor_fed_twice_is_value_error():
    a, b, _, _ = _sum_of_three()
    with pytest.raises(ValueError, match="Cannot flatten dict because this key is not unique"):
        tf.Session().run(a + b, feed_dict={(a, b): (1.0, 2.0), a: 3.0})


# ---- targets ----------------------------------------------------------------------------------
def test_an_unknown_target_is_not_found_error():
    with pytest.raises(tf.errors.NotFoundError) as info:
        tf.Session("some-unknown-target")
    assert info.value.message == (
        'No session factory registered for the given session options: {target: '
        '"some-unknown-target"} Registered factories are {GRPC_SESSION, DIRECT_SESSION}.')
    assert "grpc://host:port" in info.value.hint


def test_a_target_that_is_not_a_string_is_type_error():
    with pytest.raises(TypeError, match='Argument `target` must be a string, but got "int"'):
        tf.Session(37)


def test_a_config_passed_as_target_says_to_use_the_keyword():
    with pytest.raises(TypeError, match=r'Did you do "Session\(config\)" instead of '
                                        r'"Session\(config=config\)"\?'):
        tf.Session(tf.ConfigProto())


def test_bytes_and_none_targets_are_this_process():
    x = tf.constant(1.0)
    assert tf.Session(b"").run(x) == 1.0
    assert tf.Session(None).run(x) == 1.0
