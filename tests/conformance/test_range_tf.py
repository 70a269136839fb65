"""tf.range against TensorFlow: the inferred dtype and static shape of large ranges (no
int32 wrap-around), the values of ranges past int32, and the error class and words of
invalid or oversized ranges, while building and when the step runs. (A fed limit of 2**48 is ResourceExhaustedError in both, with TF's
"OOM when allocating tensor with shape[281474976710656] and type int64"; TF's allocator
takes about 10 s to give up, so tests/ops/test_range.py checks tfteach's alone.)"""
import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

BUILT = {
    "limit-2**48": lambda lib: lib.range(2**48),
    "step-2**20": lambda lib: lib.range(0, 2**40, 2**20),
    "int64-tensor": lambda lib: lib.range(lib.constant(1), lib.constant(2**40, lib.int64)),
    "float-limit": lambda lib: lib.range(lib.constant(3, lib.int64), 10.0),
    "explicit-dtype": lambda lib: lib.range(lib.constant(3, lib.int64), 10, dtype=lib.float32),
}


@pytest.mark.parametrize("name", sorted(BUILT))
def test_dtype_and_static_shape_match_tf(name):
    def built(lib):
        with lib.Graph().as_default():
            y = BUILT[name](lib)
            return y.dtype.name, y.shape.as_list()

    assert built(tf) == built(tf1)


def test_values_past_int32_match_tf():
    def values(lib):
        with lib.Graph().as_default():
            y = lib.range(2**40, 2**40 + 7, 3)
            with lib.Session() as session:
                return session.run(y)

    expected, got = values(tf1), values(tf)
    assert got.dtype == expected.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


FAILING = {
    "delta-0": (lambda lib: lib.range(0, 10, 0), None),
    "start-past-limit": (lambda lib: lib.range(5, 0), None),
    "over-int64": (lambda lib: lib.range(-2**62, 2**62), None),
    "float-over-int64": (lambda lib: lib.range(0.0, 1e30), None),
    "fed-over-int64": (lambda lib: lib.range(lib.placeholder(lib.int64, [], name="s"), 2**62),
                       -2**62),
    "fed-delta-0": (lambda lib: lib.range(0, 3, lib.placeholder(lib.int32, [], name="s")), 0),
}


def _failure(lib, name):
    make, fed = FAILING[name]
    with lib.Graph().as_default():
        try:
            y = make(lib)
            with lib.Session() as session:
                session.run(y, None if fed is None else {"s:0": fed})
        except Exception as e:  # noqa: BLE001 - the class and the words are compared
            lines = [line for line in str(e).splitlines() if line.startswith(("Requires", "OOM"))]
            return type(e).__name__, lines[0].split(" for '")[0].split(" on /")[0] if lines else ""
    return "no error", ""


@pytest.mark.parametrize("name", sorted(FAILING))
def test_invalid_and_oversized_ranges_fail_as_in_tf(name):
    expected = _failure(tf1, name)
    assert expected[0] != "no error"
    assert _failure(tf, name) == expected
