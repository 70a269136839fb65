"""Device discovery: virtual GPUs, CUDA_VISIBLE_DEVICES, gpu_options, memory budgets."""
import pytest

import tfteach as tf
from tfteach import config

LOCAL = "/job:localhost/replica:0/task:0/device:"


def gpu_names(cfg=None):
    return [d.name for d in config.list_devices(cfg) if d.device_type == "GPU"]


def test_two_virtual_gpus_by_default_and_they_say_so():
    gpus = [d for d in config.list_devices() if d.device_type == "GPU"]
    assert [g.name for g in gpus] == [LOCAL + "GPU:0", LOCAL + "GPU:1"]
    assert all(g.is_virtual and "virtual GPU" in g.description for g in gpus)
    assert [g.physical_index for g in gpus] == [0, 1]
    assert all(g.memory_limit == 1024 << 20 for g in gpus)


def test_env_sets_count_and_zero_is_strict_tf(monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "3")
    assert len(gpu_names()) == 3
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    assert gpu_names() == []


def test_set_virtual_gpus_from_code():
    config.set_virtual_gpus(4, memory_limit_mb=256, speeds=[1, 1, 1, 0.5])
    gpus = [d for d in config.list_devices() if d.device_type == "GPU"]
    assert len(gpus) == 4 and gpus[0].memory_limit == 256 << 20
    assert gpus[3].speed == 0.5 and "speed: 0.5x" in gpus[3].description


@pytest.mark.parametrize("bad", [dict(n=-1), dict(n=2, speeds=[1]), dict(n=1, speeds=[0])])
def test_set_virtual_gpus_rejects_bad_settings(bad):
    with pytest.raises(ValueError):
        config.set_virtual_gpus(**bad)


def test_cuda_visible_devices_masks_and_renumbers(monkeypatch):
    config.set_virtual_gpus(4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    gpus = [d for d in config.list_devices() if d.device_type == "GPU"]
    assert [(g.name, g.physical_index) for g in gpus] == [(LOCAL + "GPU:0", 2), (LOCAL + "GPU:1", 3)]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_names() == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,9,0")    # an invalid id ends the list
    assert [d.physical_index for d in config.list_devices() if d.device_type == "GPU"] == [1]


def test_visible_device_list_maps_and_errors():
    cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list="1,0"))
    gpus = [d for d in config.list_devices(cfg) if d.device_type == "GPU"]
    assert [g.physical_index for g in gpus] == [1, 0]
    for spec, msg in (("5", "invalid GPU id '5' but visible device count is 2"),
                      ("0,0", "duplicate entry"), ("x", "Could not parse entry")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
            config.list_devices(tf.ConfigProto(gpu_options=tf.GPUOptions(visible_device_list=spec)))


def test_device_count_caps_gpus():
    assert gpu_names(tf.ConfigProto(device_count={"GPU": 1})) == [LOCAL + "GPU:0"]


def test_memory_fraction_sets_budget():
    cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.25))
    gpus = [d for d in config.list_devices(cfg) if d.device_type == "GPU"]
    assert gpus[0].memory_limit == 256 << 20


def test_oom_on_virtual_gpu_is_resource_exhausted():
    with tf.device("/gpu:0"):
        big = tf.fill([8192, 8192], 1.0)
        y = big * 2.0
    cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.3))
    with pytest.raises(tf.errors.ResourceExhaustedError) as e:
        tf.Session(config=cfg).run(y)
    msg = str(e.value)
    assert msg.startswith("OOM when allocating tensor with shape[8192,8192] and type float on "
                          "/job:localhost/replica:0/task:0/device:GPU:0")
    assert "Hint:" in msg


def test_memory_is_returned_after_a_step():
    with tf.device("/gpu:0"):
        y = tf.fill([256, 256], 1.0) * 2.0
    sess = tf.Session()
    dev = [d for d in sess.devices if d.name == LOCAL + "GPU:0"][0]
    before = dev.memory.used
    sess.run(y)
    assert dev.memory.used == before and dev.memory.peak >= 2 * 256 * 256 * 4


def test_variables_count_against_the_budget_until_close():
    with tf.device("/gpu:1"):
        v = tf.Variable(tf.zeros([1024, 1024]))
    sess = tf.Session()
    dev = [d for d in sess.devices if d.name == LOCAL + "GPU:1"][0]
    before = dev.memory.used
    sess.run(v.initializer)
    assert dev.memory.used - before == 1024 * 1024 * 4
    sess.close()
    assert dev.memory.used == before


def test_allow_growth_reserves_on_demand():
    cfg = tf.ConfigProto(gpu_options=tf.GPUOptions(allow_growth=True))
    with tf.device("/gpu:0"):
        y = tf.fill([1024, 1024], 1.0) + 1.0
    sess = tf.Session(config=cfg)
    dev = [d for d in sess.devices if d.name == LOCAL + "GPU:0"][0]
    assert dev.memory.reserved == 1 << 20
    sess.run(y)
    assert (8 << 20) <= dev.memory.reserved <= dev.memory.limit
