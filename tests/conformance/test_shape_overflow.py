"""Shapes whose element count overflows int64 fail with TF's error classes: a constant
shape while building (ValueError), a fed shape or Fill's dims when the step runs
(InvalidArgumentError)."""
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
], ids=["reshape-constant", "reshape-fed", "fill"])
def test_overflowing_shapes_fail_as_in_tf(build, feed):
    expected = _error_class(tf1, build, feed)
    assert expected != "no error"
    assert _error_class(tf, build, feed) == expected
