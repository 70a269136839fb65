"""A fetched array is the learner's own: changing it changes no variable, on a local session
and on a session whose master is a Server of the same process, as on TF."""
from __future__ import annotations

import pytest

from tf_oracle import tf1  # noqa: E402 - skips without TensorFlow

import tfteach  # noqa: E402

pytestmark = pytest.mark.conformance


def _variable_after_changing_fetches(tf, target: str | None) -> list[float]:
    g = tf.Graph()
    with g.as_default():
        v = tf.Variable([1.0, 2.0])
        read = tf.identity(v)
        with tf.Session(target or "", graph=g) as sess:
            sess.run(tf.global_variables_initializer())
            for fetched in (sess.run(v), sess.run(read), sess.run([v])[0]):
                fetched += 100.0
            return sess.run(v).tolist()


@pytest.mark.parametrize("tf", [tfteach, tf1], ids=["tfteach", "tf"])
def test_changing_a_fetched_array_leaves_the_variable_alone(tf):
    assert _variable_after_changing_fetches(tf, None) == [1.0, 2.0]


@pytest.mark.cluster
@pytest.mark.parametrize("tf", [tfteach, tf1], ids=["tfteach", "tf"])
def test_the_same_holds_with_an_in_process_master(tf):
    server = tf.train.Server.create_local_server()
    try:
        assert _variable_after_changing_fetches(tf, server.target) == [1.0, 2.0]
    finally:
        if hasattr(server, "stop"):
            server.stop()
