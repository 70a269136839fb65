"""``tf.case`` without ``default`` and with ``exclusive=True``, and ``tf.Assert``, against
TensorFlow: the chosen branch's value, and when no predicate (or more than one, with
``exclusive``) holds, the same InvalidArgumentError from the same Assert node with TF's
message; ``tf.Assert``'s op and its summary of the data in the message."""
import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance


def _cases(lib, x):
    two = lib.case([(lib.equal(x, 1), lambda: lib.constant(10)),
                    (lib.equal(x, 2), lambda: lib.constant(20))])
    exclusive = lib.case([(lib.greater(x, 0), lambda: lib.constant(1)),
                          (lib.greater(x, 1), lambda: lib.constant(2))],
                         default=lambda: lib.constant(-1), exclusive=True, name="excl")
    one = lib.case([(lib.equal(x, 7), lambda: lib.constant(70))], name="one")
    three = lib.case([(lib.equal(x, 1), lambda: lib.constant(10)),
                      (lib.greater(x, 0), lambda: lib.constant(20)),
                      (lib.greater(x, 5), lambda: lib.constant(30))], exclusive=True,
                     name="three")
    return {"two": two, "exclusive": exclusive, "one": one, "three": three}


RUNS = [("two", 1), ("two", 2), ("two", 3), ("exclusive", 0), ("exclusive", 1),
        ("exclusive", 5), ("one", 7), ("one", 1), ("three", 3), ("three", 7), ("three", 0),
        ("three", 1)]


def _outcomes(lib):
    with lib.Graph().as_default():
        x = lib.placeholder(lib.int32, [], name="x")
        ys = _cases(lib, x)
        out = []
        with lib.Session() as session:
            for name, value in RUNS:
                try:
                    out.append(int(session.run(ys[name], {x: value})))
                except lib.errors.OpError as e:
                    out.append((type(e).__name__, e.op.name, _tf_message(e.message)))
        return out


def _tf_message(message: str) -> str:
    """The error's own line (TF 2 puts a 'Graph execution error' report around it)."""
    lines = [line for line in message.splitlines()
             if line.startswith(("assertion failed", "In[0] should be a scalar"))]
    return lines[0] if lines else message.splitlines()[0]


def test_case_values_and_failed_assertions_match_tf():
    expected, got = _outcomes(tf1), _outcomes(tf)
    assert got == expected
    assert ("InvalidArgumentError", "case/cond/Assert_1/AssertGuard/Assert",
            "assertion failed: [Input error: None of conditions evaluated as True:] [0 0]"
            ) in got


def _asserts(lib):
    c = lib.constant(False)
    data = [["msg", lib.constant(3)], [lib.constant([1.5, 2.0, -3.25, 4.0, 5.0])],
            [lib.constant([[1, 2], [3, 4]])], [lib.constant(["ab", "c"])],
            [lib.constant([True, False])], [lib.constant(np.arange(12).reshape(2, 2, 3))],
            [lib.constant(0.1, lib.float64)], [lib.constant(1e10)],
            [lib.constant(np.float32(1) / 3)], [lib.constant(np.zeros(0, np.int32))]]
    return [lib.Assert(c, d) for d in data] + [
        lib.Assert(c, [lib.constant([1, 2, 3, 4, 5])], summarize=4, name="four"),
        lib.Assert(lib.constant([True, False]), ["a vector"], name="vector")]


def _assert_outcomes(lib):
    with lib.Graph().as_default():
        ops, out = _asserts(lib), []
        with lib.Session() as session:
            for op in ops:
                with pytest.raises(lib.errors.InvalidArgumentError) as info:
                    session.run(op)
                out.append((op.type, op.name, _tf_message(info.value.message)))
        return out


def test_assert_ops_and_messages_match_tf():
    assert _assert_outcomes(tf) == _assert_outcomes(tf1)


def test_a_true_assert_lets_the_step_run():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        check = tf.Assert(tf.reduce_min(x) > 0.0, [x])
        with tf.control_dependencies([check]):
            y = x * 2.0
        with tf.Session() as session:
            np.testing.assert_array_equal(session.run(y, {x: [1.0, 2.0]}), [2.0, 4.0])
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[-1 2\]"):
                session.run(y, {x: [-1.0, 2.0]})
