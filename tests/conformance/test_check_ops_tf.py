"""The assertions, ``tf.check_numerics``, ``tf.Print`` and ``tf.print`` against TensorFlow:
the op each returns (type and name), run-time failures (class and TF's message), checks
decided while building (constants, known ranks, dtypes) and the printed text."""
import sys

import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = [pytest.mark.conformance, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

X, BAD = [1.0, 2.0, 3.0], [-1.0, 2.0, 4.0]
CHECKS = {
    "assert_equal": lambda lib, x: lib.assert_equal(x, lib.constant(X)),
    "assert_none_equal": lambda lib, x: lib.assert_none_equal(x, lib.constant([-1.0, 0.0, 0.0])),
    "assert_less": lambda lib, x: lib.assert_less(x, 3.5, message="too big", summarize=2),
    "assert_less_equal": lambda lib, x: lib.assert_less_equal(x, 3.0),
    "assert_greater": lambda lib, x: lib.assert_greater(x, 0.5, name="above"),
    "assert_greater_equal": lambda lib, x: lib.debugging.assert_greater_equal(x, 1.0),
    "assert_positive": lambda lib, x: lib.assert_positive(x),
    "assert_non_negative": lambda lib, x: lib.assert_non_negative(x, message="m"),
    "assert_negative": lambda lib, x: lib.assert_negative(-x),
    "assert_rank": lambda lib, x: lib.assert_rank(x, 1),
    "assert_rank_at_least": lambda lib, x: lib.assert_rank_at_least(x, 1),
}


def _own_line(message, start):
    """The error's own line (TF 2 puts a 'Graph execution error' report around it)."""
    return next(line for line in message.splitlines() if line.startswith(start))


def _outcome(lib, check, value):
    """The returned op's (type, name) and the run's error (class, first line) or None."""
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float32, None if check.startswith("assert_rank") else [3])
        op = CHECKS[check](lib, x)
        with lib.control_dependencies([op]):
            y = lib.identity(x)
        with lib.Session() as session:
            try:
                session.run(y, {x: value if check != "assert_negative" else [-v for v in value]})
                error = None
            except lib.errors.InvalidArgumentError as e:
                error = _own_line(e.message, "assertion failed")
        return (op.type, op.name), error


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_assertions_pass_and_fail_as_in_tf(check):
    bad = {"assert_rank": [[1.0, 2.0]], "assert_rank_at_least": 1.0}.get(check, BAD)
    for value in (X, bad):
        assert _outcome(tf, check, value) == _outcome(tf1, check, value)
    assert _outcome(tf, check, bad)[1].startswith("assertion failed: [")


def _build_error(lib, build):
    with lib.Graph().as_default():
        try:
            op = build(lib)
        except (lib.errors.InvalidArgumentError, ValueError, TypeError) as e:
            text = e.message if isinstance(e, lib.errors.OpError) else str(e)
            return type(e).__name__, text.split("\nHint:")[0]
        return op.type, op.name


@pytest.mark.parametrize("build", [
    lambda lib: lib.assert_equal([1, 2], [1, 3]),
    lambda lib: lib.assert_equal([1, 2], [1, 2]),
    lambda lib: lib.assert_positive(lib.constant([1.5, -2.0]), message="weights"),
    lambda lib: lib.assert_less(lib.constant([[1, 5]]), 4),
    lambda lib: lib.assert_equal(lib.shape(lib.zeros([2, 3])), [2, 4]),
    lambda lib: lib.assert_equal(lib.size(lib.zeros([2, 3])), 6),
    lambda lib: lib.assert_greater(lib.rank(lib.zeros([2, 3])), lib.cast(3.0, lib.int32)),
    lambda lib: lib.assert_rank(lib.placeholder(lib.float32, [3]), 2, message="batch"),
    lambda lib: lib.assert_rank(lib.placeholder(lib.float32, [3, 1]), 2),
    lambda lib: lib.assert_type(lib.placeholder(lib.float32), lib.int32),
    lambda lib: lib.assert_type(lib.constant(1), lib.int32),
    lambda lib: lib.debugging.assert_type(lib.constant(1.0), lib.float32, name="t"),
    lambda lib: lib.assert_rank_at_least(lib.placeholder(lib.float32, [3]), 2, message="m"),
    lambda lib: lib.assert_rank_at_least(lib.placeholder(lib.float32, [3, 1]), 1),
    lambda lib: lib.assert_integer(lib.constant(1.0)),
    lambda lib: lib.debugging.assert_integer(lib.constant(1), name="i"),
    lambda lib: lib.assert_scalar(lib.constant([1.0]), message="m"),
    lambda lib: lib.assert_scalar(lib.placeholder(lib.float32)),
    lambda lib: lib.assert_scalar(lib.constant(1.0)).op,
], ids=["equal-bad", "equal-ok", "positive-bad", "less-bad", "shape-bad", "size-ok",
        "rank-cast-bad", "rank-bad", "rank-ok", "type-bad", "type-ok", "type-named",
        "rank-at-least-bad", "rank-at-least-ok", "integer-bad", "integer-ok", "scalar-bad",
        "scalar-unknown", "scalar-ok"])
def test_checks_decided_while_building_match_tf(build):
    assert _build_error(tf, build) == _build_error(tf1, build)


def _numerics(lib, value, grad):
    with lib.Graph().as_default():
        x = lib.constant(value)
        y = lib.check_numerics(lib.log(x), "log of x")
        fetch = lib.gradients(y, [x])[0] if grad else y
        with lib.Session() as session:
            try:
                return fetch.op.type, session.run(fetch).tolist()
            except lib.errors.InvalidArgumentError as e:
                return fetch.op.type, _own_line(e.message, ("log of x", "Not a number"))


@pytest.mark.parametrize("value", [[1.0, 2.0], [0.0, 1.0], [-1.0, 1.0], [0.0, -1.0]])
@pytest.mark.parametrize("grad", [False, True])
def test_check_numerics_matches_tf(value, grad):
    assert _numerics(tf, value, grad) == _numerics(tf1, value, grad)


def _all_finite(lib, value):
    with lib.Graph().as_default():
        x = lib.placeholder(lib.float32, [2])
        y = lib.debugging.assert_all_finite(x, "x is finite") * 2.0
        z = lib.verify_tensor_all_finite(x, "again", name="v")
        with lib.Session() as session:
            try:
                return y.op.inputs[0].name, z.name, session.run(y, {x: value}).tolist()
            except lib.errors.InvalidArgumentError as e:
                return y.op.inputs[0].name, z.name, _own_line(e.message, "x is finite")


@pytest.mark.parametrize("value", [[1.0, 2.0], [np.inf, 1.0]])
def test_assert_all_finite_matches_tf(value):
    assert _all_finite(tf, value) == _all_finite(tf1, value)


def test_check_numerics_refuses_integers_as_tf():
    for lib in (tf, tf1):
        with lib.Graph().as_default(), pytest.raises(TypeError, match="DataType int32"):
            lib.check_numerics(lib.constant([1]), "m")


def _printed(lib, capfd, marker):
    """What ``tf.Print`` and ``tf.print`` wrote (lines holding ``marker``), and Print's
    output values."""
    with lib.Graph().as_default():
        x = lib.constant([[1.5, 2.0, 3.25, 4.0, 5.0, 6.0, 7.0], [1e-7, 2, 3, 4, 5, 6, 7.5]])
        y = lib.Print(x, [x, lib.range(10), "s"], f"{marker} Print: ", summarize=4)
        once = lib.Print(x, [lib.constant([True, False])], f"{marker} once: ", first_n=1)
        ops = [lib.print(f"{marker} print:", x, 7, lib.constant("hi"), lib.constant(["a", "b"]),
                         lib.constant(True), lib.zeros([2, 2, 8], lib.int32)),
               lib.print(marker, lib.range(10), summarize=2, sep="|", end="END\n"),
               lib.print(marker, lib.range(9), lib.range(8), summarize=None),
               lib.print(marker, lib.range(12), summarize=-1),
               lib.print(marker, [lib.range(3), 1, "s"], {"a": lib.constant(2.5)}, (7,)),
               lib.print(marker, lib.zeros([0, 3]), output_stream=sys.stdout)]
        with lib.Session() as session:
            capfd.readouterr()
            value = session.run(y)
            session.run([ops, once])
            session.run(once)
        out, err = capfd.readouterr()
    pick = [line for line in err.splitlines() if marker in line or line.startswith(" ")]
    return value, pick, [line for line in out.splitlines() if marker in line]


def test_print_and_tf_print_write_what_tf_writes(capfd):
    got, want = _printed(tf, capfd, "@@"), _printed(tf1, capfd, "@@")
    np.testing.assert_array_equal(got[0], want[0])
    assert sorted(got[1]) == sorted(want[1]) and len(got[1]) >= 5
    assert got[2] == want[2] == ["@@ []"]


def test_print_ops_are_built_as_in_tf():
    def built(lib):
        with lib.Graph().as_default():
            x = lib.constant([1.0])
            p = lib.Print(x, [x])
            q = lib.print("a", x, name="show")
            g = lib.gradients(p * 2.0, [x])[0]
            return [(p.op.type, p.name), (q.type, q.name), (q.inputs[0].op.type,), g.op.type]
    assert built(tf) == built(tf1)
