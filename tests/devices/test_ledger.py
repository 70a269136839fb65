"""Virtual GPU memory shared between processes through a ledger folder: TF's allocator takes
its region when a GPU device starts, backs off by 0.9 with CUDA's 'failed to allocate' log
lines when the GPU is full, and fails the ops that need more (bfc_allocator.cc Extend)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tfteach.devices import ledger

MiB = 1 << 20

PROGRAM = textwrap.dedent("""
    import sys
    import tfteach as tf
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.4))
    with tf.device('/gpu:0'):
        total = tf.reduce_sum(tf.ones([300, 1024, 256]))      # a 300 MiB tensor
    sess = tf.Session(config=config)
    print('ready', flush=True)
    sys.stdin.readline()
    try:
        sess.run(total)
        print('ran', flush=True)
    except tf.errors.ResourceExhaustedError as e:
        print(type(e).__name__, e.message.splitlines()[0], flush=True)
    sys.stdin.readline()
""")


def start(env):
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.fixture
def three_programs(tmp_path):
    env = dict(os.environ, TFTEACH_GPU_LEDGER=str(tmp_path), TFTEACH_VIRTUAL_GPUS="1")
    procs = [start(env) for _ in range(3)]
    results = []
    for proc in procs:
        proc.stdin.write("\n")
        proc.stdin.flush()
        results.append(proc.stdout.readline().strip())
    logs = [proc.communicate("\n", timeout=60)[1] for proc in procs]
    return results, logs, tmp_path


@pytest.mark.slow
def test_three_processes_at_fraction_04_two_fit_and_the_third_fails(three_programs):
    results, logs, ledger_dir = three_programs
    assert results[:2] == ["ran", "ran"]
    assert results[2].startswith("ResourceExhaustedError OOM when allocating tensor with "
                                 "shape[300,1024,256] and type float")
    assert "failed to allocate 409.60MiB (429496576 bytes) from device: " \
           "CUDA_ERROR_OUT_OF_MEMORY: out of memory" in logs[2]
    assert logs[:2] == ["", ""]
    assert json.loads((ledger_dir / "gpu0.json").read_text()) == {}   # all released at exit


def other_process_holds(tmp_path, pid, nbytes):
    (tmp_path / "gpu0.json").write_text(json.dumps({str(pid): nbytes}))


def test_backpedal_takes_what_is_free_and_logs_each_failed_try(tmp_path, caplog):
    other_process_holds(tmp_path, os.getppid(), 800 * MiB)
    region = ledger.Region(str(tmp_path), 0, 1024 * MiB)
    held = region.grow(400 * MiB, 1280)
    assert 0 < held <= 224 * MiB and held > 0.9 * 224 * MiB
    assert sum("failed to allocate" in r.message for r in caplog.records) == 6
    region.release()


def test_after_one_backpedal_a_region_does_not_back_off_again(tmp_path):
    other_process_holds(tmp_path, os.getppid(), 800 * MiB)
    region = ledger.Region(str(tmp_path), 0, 1024 * MiB)
    held = region.grow(400 * MiB, 1280)
    assert region.grow(400 * MiB, held + 1) == held
    region.release()


def test_a_dead_process_holds_nothing(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    other_process_holds(tmp_path, int(dead), 1024 * MiB)
    region = ledger.Region(str(tmp_path), 0, 1024 * MiB)
    assert region.grow(1024 * MiB, 1280) == 1024 * MiB
    region.release()
    assert json.loads((tmp_path / "gpu0.json").read_text()) == {}


@pytest.mark.parametrize("nbytes, text", [(1000, "1000B"), (1280, "1.2KiB"),
                                          (12345678, "11.77MiB"), (429496729, "409.60MiB")])
def test_byte_counts_are_written_as_tf_logs_them(nbytes, text):
    assert ledger.human_bytes(nbytes) == text
