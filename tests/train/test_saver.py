"""tf.train.Saver: round trips, max_to_keep, latest_checkpoint, renamed variables, and
restore errors that name the variable (NotFoundError / InvalidArgumentError)."""
import os

import numpy as np
import pytest

import tfteach as tf
from tfteach.errors import InvalidArgumentError, NotFoundError


def _model(shape=(2, 3), dtype=tf.float32):
    w = tf.get_variable("layer/w", list(shape), dtype=dtype,
                        initializer=tf.random_normal_initializer(seed=1))
    b = tf.get_variable("layer/b", [shape[-1]], dtype=dtype, initializer=tf.zeros_initializer())
    return w, b


def test_save_then_restore_into_a_fresh_session_and_graph(tmp_path):
    w, b = _model()
    step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([b.assign([1.0, 2.0, 3.0]), tf.assign(step, 42)])
        saved_w = sess.run(w)
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    assert path == str(tmp_path / "model.ckpt-42")
    assert tf.train.latest_checkpoint(str(tmp_path)) == path
    assert dict(tf.train.list_variables(str(tmp_path))) == {
        "global_step": [], "layer/b": [3], "layer/w": [2, 3]}
    tf.reset_default_graph()
    w, b = _model()
    step = tf.train.get_or_create_global_step()
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, path)
        np.testing.assert_array_equal(sess.run(w), saved_w)
        np.testing.assert_array_equal(sess.run(b), [1.0, 2.0, 3.0])
        assert sess.run(step) == 42


def test_restore_builds_ops_under_save(tmp_path):
    _model()
    tf.train.Saver()
    names = {op.name for op in tf.get_default_graph().get_operations()}
    assert {"save/restore_all", "save/Assign", "save/Assign_1"} <= names


def test_max_to_keep_deletes_the_oldest_and_the_state_file_lists_the_rest(tmp_path):
    _model()
    saver = tf.train.Saver(max_to_keep=2)
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = [saver.save(sess, prefix, global_step=i) for i in range(4)]
    assert saver.last_checkpoints == paths[2:]
    assert [tf.train.checkpoint_exists(p) for p in paths] == [False, False, True, True]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.all_model_checkpoint_paths == paths[2:]
    assert state.model_checkpoint_path == paths[3]


def test_a_dict_var_list_saves_under_other_names(tmp_path):
    w, _ = _model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver({"old/kernel": w}).save(sess, str(tmp_path / "c"))
        np.testing.assert_array_equal(tf.train.load_variable(path, "old/kernel"), sess.run(w))


def test_restoring_a_variable_missing_from_the_checkpoint_names_it(tmp_path):
    w, _ = _model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver([w]).save(sess, str(tmp_path / "c"))
        saver = tf.train.Saver()
        with pytest.raises(NotFoundError, match=r"Key layer/b not found in checkpoint[\s\S]*"
                                                r"Hint: the checkpoint holds: layer/w"):
            saver.restore(sess, path)


def test_restoring_a_variable_of_another_shape_names_it_and_changes_nothing(tmp_path):
    _model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(sess, str(tmp_path / "c"))
    tf.reset_default_graph()
    _, b = _model(shape=(2, 4))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        before = sess.run(b)
        sess.run(b.assign(before + 5))
        with pytest.raises(InvalidArgumentError, match=r"variable 'layer/w' has shape \[2, 4\] "
                                                       r"in the graph but \[2, 3\] in checkpoint"):
            tf.train.Saver().restore(sess, path)
        np.testing.assert_array_equal(sess.run(b), before + 5)   # all or nothing


def test_restoring_a_variable_of_another_dtype_names_it(tmp_path):
    _model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(sess, str(tmp_path / "c"))
    tf.reset_default_graph()
    _model(dtype=tf.float64)
    with tf.Session() as sess:
        with pytest.raises(InvalidArgumentError, match="tensor_name = layer/w; expected dtype "
                                                       "float64 does not equal original dtype "
                                                       "float32"):
            tf.train.Saver().restore(sess, path)


def test_restore_from_none_is_a_value_error(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="Can't load save_path when it is None."):
            saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))


def test_restore_from_a_path_without_checkpoint_is_tfs_value_error(tmp_path):
    _model()
    saver = tf.train.Saver()
    path = str(tmp_path / "nothing-here")
    with tf.Session() as sess:
        with pytest.raises(ValueError) as info:
            saver.restore(sess, path)
    message, hint = str(info.value).split("\nHint: ")
    assert message == f"The passed save_path is not a valid checkpoint: {path}"
    assert "tf.train.latest_checkpoint" in hint


def test_saver_argument_errors():
    with pytest.raises(ValueError, match="No variables to save"):
        tf.train.Saver()
    w, _ = _model()
    with pytest.raises(ValueError, match="At least two variables have the same name: layer/w"):
        tf.train.Saver([w, w])
    with pytest.raises(TypeError, match="Variable to save is not a Variable"):
        tf.train.Saver([tf.constant(1.0)])


def test_save_into_a_missing_directory_creates_it_as_tf_does(tmp_path):
    _model()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = saver.save(sess, os.path.join(str(tmp_path), "missing", "m"))
    assert os.path.isfile(prefix + ".index")
    assert tf.train.latest_checkpoint(os.path.join(str(tmp_path), "missing")) == prefix


def test_save_where_no_directory_can_be_made_is_not_found(tmp_path):
    _model()
    (tmp_path / "file").write_text("not a folder")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(NotFoundError, match="Parent directory of .* doesn't exist"):
            saver.save(sess, os.path.join(str(tmp_path), "file", "sub", "m"))


def test_training_resumes_from_a_checkpoint(tmp_path):
    """Train, save, rebuild the program, restore, and continue from the same weights."""
    def build():
        w = tf.get_variable("w", [], initializer=tf.constant_initializer(5.0))
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.25).minimize(tf.square(w), global_step=step)
        return w, step, train
    w, step, train = build()
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        sess.run(train)
        saver.save(sess, str(tmp_path / "m"), global_step=step)
    tf.reset_default_graph()
    w, step, train = build()
    with tf.Session() as sess:
        tf.train.Saver().restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        sess.run(train)
        assert sess.run([w, step]) == [pytest.approx(5.0 * 0.5 ** 3), 3]
