"""TF's process-wide GPU options: the first session (or Server) that creates a process's GPUs
fixes their memory options and their CUDA devices; later sessions share them. TF itself needs
a GPU to show this, so the oracle is its source (GPUProcessState::GetGPUAllocator, and
GpuIdManager's AlreadyExists error); the conformance test checks the error class."""
import pytest

import tfteach as tf
from tfteach import config

MiB = 1 << 20


def gpu_options(**kwargs):
    return tf.ConfigProto(gpu_options=tf.GPUOptions(**kwargs))


def gpu0(sess):
    return next(d for d in sess.devices if d.short_name == "GPU:0")


def test_first_session_fixes_the_memory_fraction_for_the_process():
    tf.Session(config=gpu_options(per_process_gpu_memory_fraction=0.4))
    later = tf.Session(config=gpu_options(per_process_gpu_memory_fraction=0.9))
    assert gpu0(later).memory_limit == int(1024 * MiB * 0.4)


def test_later_allow_growth_is_ignored():
    tf.Session()
    later = tf.Session(config=gpu_options(allow_growth=True))
    assert not gpu0(later).memory.allow_growth
    assert gpu0(later).memory.reserved == 1024 * MiB


def test_sessions_of_a_process_share_one_budget_per_gpu():
    with tf.device("/gpu:0"):
        v = tf.Variable(tf.zeros([256, 1024]))
    first, second = tf.Session(), tf.Session(config=gpu_options(allow_growth=True))
    second.run(v.initializer)
    assert gpu0(first).memory.used == 1 * MiB


def test_another_visible_device_list_in_the_same_process_is_already_exists():
    tf.Session(config=gpu_options(visible_device_list="0"))
    with pytest.raises(tf.errors.AlreadyExistsError) as e:
        tf.Session(config=gpu_options(visible_device_list="1"))
    assert e.value.message.startswith(
        "TensorFlow device (GPU:0) is being mapped to multiple CUDA devices (1 now, and 0 "
        "previously), which is not supported.")
    assert "visible_device_list" in e.value.hint


def test_the_same_mapping_again_is_allowed():
    tf.Session(config=gpu_options(visible_device_list="0"))
    both = tf.Session()      # GPU:0 -> 0 again, GPU:1 -> 1 for the first time
    assert [d.physical_index for d in both.devices if d.device_type == "GPU"] == [0, 1]


def test_list_devices_only_looks():
    assert config.list_devices(gpu_options(per_process_gpu_memory_fraction=0.9))
    sess = tf.Session(config=gpu_options(per_process_gpu_memory_fraction=0.25))
    assert gpu0(sess).memory_limit == 256 * MiB


def test_list_devices_shows_the_options_a_session_fixed():
    tf.Session(config=gpu_options(per_process_gpu_memory_fraction=0.25))
    listed = config.list_devices(gpu_options(per_process_gpu_memory_fraction=0.9))
    assert [d.memory_limit for d in listed if d.device_type == "GPU"] == [256 * MiB] * 2


def test_server_config_fixes_the_options_of_the_process():
    server = tf.train.Server.create_local_server(
        config=gpu_options(per_process_gpu_memory_fraction=0.25))
    try:
        local = tf.Session(config=gpu_options(per_process_gpu_memory_fraction=0.9))
        assert gpu0(local).memory_limit == 256 * MiB
    finally:
        server.stop()


def test_reset_virtual_gpus_starts_afresh():
    tf.Session(config=gpu_options(per_process_gpu_memory_fraction=0.25))
    config.reset_virtual_gpus()
    sess = tf.Session(config=gpu_options(visible_device_list="1"))
    assert gpu0(sess).memory_limit == 1024 * MiB and gpu0(sess).physical_index == 1


@pytest.mark.conformance
def test_already_exists_is_tfs_error_class():
    tf1 = pytest.importorskip("tensorflow").compat.v1
    assert tf.errors.AlreadyExistsError.__name__ == tf1.errors.AlreadyExistsError.__name__
    assert tf.errors.AlreadyExistsError.error_code == tf1.errors.ALREADY_EXISTS
