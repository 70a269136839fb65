"""DeviceSpec parsing, printing and tf.device nesting, against TF 1.x's rules."""
import pytest

import tfteach as tf
from tfteach.framework.device_spec import DeviceSpec, canonical


@pytest.mark.parametrize("text, expected", [
    ("/cpu:0", "/device:CPU:0"),
    ("/gpu:1", "/device:GPU:1"),
    ("/GPU:1", "/device:GPU:1"),
    ("gpu:0", "/device:GPU:0"),
    ("/device:GPU:1", "/device:GPU:1"),
    ("/cpu:*", "/device:CPU:*"),
    ("/device:GPU", "/device:GPU:*"),
    ("/job:worker/replica:0/task:1/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"),
    ("/task:1/job:ps", "/job:ps/task:1"),
    ("/job:*/task:2", "/task:2"),
    ("/", ""),
    ("", ""),
])
def test_canonical_forms(text, expected):
    assert canonical(text) == expected


def test_fields_parse():
    s = DeviceSpec.from_string("/job:ps/replica:0/task:3/device:GPU:2")
    assert (s.job, s.replica, s.task, s.device_type, s.device_index) == ("ps", 0, 3, "GPU", 2)


@pytest.mark.parametrize("bad", ["/gpu:x", "/foo:1", "/job:1bad", "/task:x"])
def test_malformed_spec_is_unknown_attribute(bad):
    with pytest.raises(ValueError, match="Unknown attribute"):
        DeviceSpec.from_string(bad)


def test_multiple_device_types_is_an_error():
    with pytest.raises(ValueError, match="Cannot specify multiple device types"):
        DeviceSpec.from_string("/cpu:0/gpu:1")


def test_merge_from_lets_set_fields_win():
    a = DeviceSpec.from_string("/job:ps/device:CPU:1")
    b = DeviceSpec.from_string("/task:2/device:GPU:0")
    assert a.merge_from(b).to_string() == "/job:ps/task:2/device:GPU:0"


@pytest.mark.parametrize("outer, inner, expected", [
    ("/cpu:1", "/job:worker", "/job:worker/device:CPU:1"),
    ("/cpu:1", "/device:CPU:2", "/device:CPU:2"),
    ("/cpu:1", None, ""),
    ("/job:ps", lambda op: "/cpu:0", "/job:ps/device:CPU:0"),
    (lambda op: "/job:w/task:3", "/gpu:1", "/job:w/task:3"),
    ("/gpu:0", "", "/device:GPU:0"),
])
def test_nested_device_scopes_merge_as_tf(outer, inner, expected):
    with tf.device(outer):
        with tf.device(inner):
            c = tf.constant(1.0)
    assert c.op.device == expected


def test_device_function_sees_the_op():
    def on_cpu_if_var(op):
        return "/cpu:0" if op.type == "VariableV2" else "/gpu:0"
    with tf.device(on_cpu_if_var):
        v = tf.Variable(1.0, name="v")
        y = v * 2.0
    assert v.op.device == "/device:CPU:0"
    assert y.op.device == "/device:GPU:0"


def test_device_spec_object_as_scope():
    with tf.device(tf.DeviceSpec(job="ps", task=0)):
        c = tf.constant(1)
    assert c.device == "/job:ps/task:0"
