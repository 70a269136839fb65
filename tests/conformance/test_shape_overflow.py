"""Shapes whose element count overflows int64 fail with TF's error classes: a constant
shape or a placeholder's while building (ValueError), a fed shape, Fill's dims, BroadcastTo's
shape or Tile's multiples when the step runs (InvalidArgumentError); an int32 Shape of a
dimension past 2**31 - 1 fails (InvalidArgumentError) and an int64 one holds it."""
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance
HUGE = [2**40, 2**40]


def _error_class(lib, build, run_feed):
    graph = lib.Graph()
    with graph.as_default():
        try:
            y = build(lib)
            with lib.Session() as session:
                session.run(y, run_feed(graph) if run_feed else None)
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            return type(e).__name__
    return "no error"


def _fed(graph):
    x, s = [op.outputs[0] for op in graph.get_operations() if op.type == "Placeholder"]
    return {x: [1.0], s: HUGE}


@pytest.mark.parametrize("build,feed", [
    (lambda lib: lib.reshape(lib.constant([1.0]), HUGE), None),
    (lambda lib: lib.reshape(lib.placeholder(lib.float32), lib.placeholder(lib.int64)), _fed),
    (lambda lib: lib.fill(HUGE, 1.0), None),
    (lambda lib: lib.broadcast_to(lib.constant(1.0), HUGE), None),
    (lambda lib: lib.broadcast_to(1.0, lib.placeholder_with_default(
        lib.constant(HUGE, lib.int64), [2])), None),
    (lambda lib: lib.tile(lib.constant([[1.0]]), HUGE), None),
    (lambda lib: lib.placeholder(lib.float32, HUGE), None),
    (lambda lib: lib.shape(lib.placeholder_with_default(lib.zeros([2**31 + 1, 0]), [None, 0])),
     None),
], ids=["reshape-constant", "reshape-fed", "fill", "broadcast-constant", "broadcast-fed",
        "tile", "placeholder", "int32-shape-of-a-long-dimension"])
def test_overflowing_shapes_fail_as_in_tf(build, feed):
    expected = _error_class(tf1, build, feed)
    assert expected != "no error"
    assert _error_class(tf, build, feed) == expected


def test_an_int64_shape_holds_a_dimension_past_int32():
    def shape_of(lib):
        with lib.Graph().as_default():
            x = lib.placeholder_with_default(lib.zeros([2**31 + 1, 0]), [None, 0])
            s = lib.shape(x, out_type=lib.int64)
            with lib.Session() as session:
                return s.dtype.name, session.run(s).tolist()
    assert shape_of(tf) == shape_of(tf1) == ("int64", [2**31 + 1, 0])


def _fed_dims(graph):
    (dims,) = [op.outputs[0] for op in graph.get_operations() if op.type == "Placeholder"]
    return {dims: [-1, 2]}


@pytest.mark.parametrize("build,feed", [
    (lambda lib: lib.fill([-1, 2], 1.0), None),
    (lambda lib: lib.fill(lib.placeholder(lib.int32, [2]), 1.0), _fed_dims),
], ids=["constant", "fed"])
def test_a_negative_fill_dimension_fails_as_in_tf(build, feed):
    """A constant negative dimension is a ValueError while building; a fed one is
    InvalidArgumentError when the step runs (not an UnknownError from NumPy)."""
    expected = _error_class(tf1, build, feed)
    assert expected in ("ValueError", "InvalidArgumentError")
    assert _error_class(tf, build, feed) == expected
