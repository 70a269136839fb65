"""The placer against TF 1.x's rules (colocation, candidates, soft placement) and the classic
TF 1.x tutorial programs."""
import pytest

import tfteach as tf

LOCAL = "/job:localhost/replica:0/task:0/device:"


def placed(sess, tensor_or_op):
    op = getattr(tensor_or_op, "op", tensor_or_op)
    return sess.placement().devices[op.name].name


def test_default_is_gpu0_then_cpu(monkeypatch):
    c = tf.constant(1.0) + 1.0
    assert placed(tf.Session(), c) == LOCAL + "GPU:0"
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    assert placed(tf.Session(), c) == LOCAL + "CPU:0"


def test_generators_follow_their_consumers():
    a = tf.constant(1.0, name="a")
    b = tf.constant(2.0, name="b")
    with tf.device("/cpu:0"):
        c = tf.add(a, b)
    sess = tf.Session()
    assert placed(sess, a) == placed(sess, b) == LOCAL + "CPU:0"


def test_generator_with_consumers_on_two_devices_goes_first_candidate():
    a = tf.constant(1.0, name="a")
    with tf.device("/cpu:0"):
        x = a + 1.0
    with tf.device("/gpu:1"):
        y = a + 2.0
    assert placed(tf.Session(), a) == LOCAL + "GPU:0"


def test_log_device_placement_order_and_format(capsys):
    a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3], name="a")
    b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2], name="b")
    c = tf.matmul(a, b)
    sess = tf.Session(config=tf.ConfigProto(log_device_placement=True))
    assert sess.run(c).tolist() == [[22.0, 28.0], [49.0, 64.0]]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Device mapping:"
    assert out[1].startswith(LOCAL + "GPU:0 -> device: 0, name: tfteach virtual GPU")
    assert out[3:] == [f"MatMul: (MatMul): {LOCAL}GPU:0", f"a: (Const): {LOCAL}GPU:0",
                       f"b: (Const): {LOCAL}GPU:0"]


def test_no_gpus_prints_no_known_devices(capsys, monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    tf.constant(1.0)
    tf.Session(config=tf.ConfigProto(log_device_placement=True))
    assert capsys.readouterr().out.startswith("Device mapping: no known devices.")


def test_two_towers_summed_on_cpu():
    towers = []
    for d in ["/gpu:0", "/gpu:1"]:
        with tf.device(d):
            a = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[2, 3])
            b = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[3, 2])
            towers.append(tf.matmul(a, b))
    with tf.device("/cpu:0"):
        total = tf.add_n(towers)
    sess = tf.Session()
    assert sess.run(total).tolist() == [[44.0, 56.0], [98.0, 128.0]]
    assert [placed(sess, t) for t in towers + [total]] == [
        LOCAL + "GPU:0", LOCAL + "GPU:1", LOCAL + "CPU:0"]


def test_nonexistent_gpu_fails_then_soft_placement():
    with tf.device("/gpu:2"):
        c = tf.constant(1.0, name="a") * 2.0
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.Session().run(c)
    msg = str(e.value)
    assert msg.startswith("Cannot assign a device for operation 'mul': Operation was explicitly "
                          "assigned to /device:GPU:2 but available devices are [ "
                          f"{LOCAL}CPU:0, {LOCAL}GPU:0, {LOCAL}GPU:1 ]. Make sure the device "
                          "specification refers to a valid device.")
    assert "Hint:" in msg and "allow_soft_placement=True" in msg
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    assert sess.run(c) == 2.0 and placed(sess, c) == LOCAL + "GPU:0"


def test_int32_variable_on_gpu_needs_soft_placement():
    with tf.device("/gpu:0"):
        v = tf.Variable(3)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.Session().run(v.initializer)
    msg = str(e.value)
    assert ("Cannot assign a device for operation 'Variable': Could not satisfy explicit device "
            "specification '/device:GPU:0' because no supported kernel for GPU devices is "
            "available.") in msg
    assert "Colocation Debug Info" in msg and "Variable/Assign (Assign) /device:GPU:0" in msg
    sess = tf.Session(config=tf.ConfigProto(allow_soft_placement=True))
    sess.run(v.initializer)
    assert sess.run(v) == 3 and placed(sess, v) == LOCAL + "CPU:0"


def test_variables_pinned_to_cpu_multiply_on_gpu():
    with tf.device("/cpu:0"):
        w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
    with tf.device("/gpu:0"):
        y = tf.matmul(w, w)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    assert sess.run(y).tolist() == [[7.0, 10.0], [15.0, 22.0]]
    assert placed(sess, w) == LOCAL + "CPU:0" and placed(sess, y) == LOCAL + "GPU:0"


def test_device_function_places_variables_on_cpu():
    def variables_on_cpu(op):
        return "/cpu:0" if op.type == "VariableV2" else "/gpu:0"
    with tf.device(variables_on_cpu):
        w = tf.Variable(2.0, name="w")
        y = w * 3.0
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    assert sess.run(y) == 6.0
    d = sess.placement().devices
    assert d["w"].name == d["w/Assign"].name == d["w/read"].name == LOCAL + "CPU:0"
    assert placed(sess, y) == LOCAL + "GPU:0"


def test_ref_edge_source_spec_wins():
    with tf.device("/cpu:1"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/cpu:2"):
        up = tf.assign(v, 5.0)
    sess = tf.Session(config=tf.ConfigProto(device_count={"CPU": 3}))
    sess.run(v.initializer)
    sess.run(up)
    assert placed(sess, up) == placed(sess, v)


def test_colocation_conflict_without_soft_placement():
    with tf.device("/cpu:1"):
        a = tf.Variable(1.0, name="a")
    with tf.colocate_with(a.op):
        with tf.device("/cpu:2"):
            with pytest.warns(UserWarning, match="Ignoring colocation property"):
                c = tf.identity(a, name="c")
    cfg = tf.ConfigProto(device_count={"CPU": 3})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot colocate nodes 'c' and 'a: "
                       "Cannot merge devices with incompatible ids"):
        tf.Session(config=cfg).run(c)
    cfg.allow_soft_placement = True
    sess = tf.Session(config=cfg)
    sess.run(a.initializer)
    assert sess.run(c) == 1.0 and placed(sess, c) == placed(sess, a) == LOCAL + "CPU:0"


def test_job_is_never_relaxed_by_soft_placement():
    with tf.device("/job:worker"):
        c = tf.constant(1.0) + 1.0
    with pytest.raises(tf.errors.InvalidArgumentError, match="explicitly assigned to /job:worker"):
        tf.Session(config=tf.ConfigProto(allow_soft_placement=True)).run(c)


def test_three_cpus_from_device_count():
    with tf.device("/cpu:2"):
        c = tf.constant(1.0) + 1.0
    sess = tf.Session(config=tf.ConfigProto(device_count={"CPU": 3, "GPU": 0}))
    assert placed(sess, c) == LOCAL + "CPU:2"
    assert len(sess.list_devices()) == 3


def test_gpu_names_sort_as_strings():
    from tfteach import config
    config.set_virtual_gpus(12)
    c = tf.constant(1.0) + 1.0
    sess = tf.Session()
    assert placed(sess, c) == LOCAL + "GPU:0"
    names = [d.name for d in sess.list_devices()]
    assert names.index(LOCAL + "GPU:10") < names.index(LOCAL + "GPU:2")
