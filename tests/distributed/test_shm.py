"""Shared-memory segments are named after their creator, taken once, and never left behind."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from tfteach import errors
from tfteach.distributed import shm

pytestmark = pytest.mark.skipif(not shm.available(), reason="needs /dev/shm")


def _export(nbytes=1 << 20):
    data = np.arange(nbytes, dtype=np.uint8)
    return data, shm.export(memoryview(data))


def test_export_names_the_segment_after_this_process():
    _, name = _export()
    try:
        assert name.startswith(f"tfteach_{os.getpid()}_")
        assert shm.owner_pid(name) == os.getpid()
        assert (shm.SHM_DIR / name).stat().st_mode & 0o777 == 0o600
    finally:
        shm.release(name)


def test_take_copies_out_and_unlinks():
    data, name = _export()
    out = np.empty_like(data)
    shm.take(name, data.nbytes, memoryview(out))
    np.testing.assert_array_equal(out, data)
    assert not (shm.SHM_DIR / name).exists()


def test_take_of_a_missing_segment_is_data_loss_with_hint():
    with pytest.raises(errors.DataLossError, match="is gone") as info:
        shm.take(f"tfteach_{os.getpid()}_999999_00", 4, memoryview(bytearray(4)))
    assert "Hint:" in str(info.value)


def test_take_refuses_names_outside_tfteach_segments():
    with pytest.raises(errors.DataLossError, match="Invalid shared-memory segment name"):
        shm.take("../../etc/passwd", 4, memoryview(bytearray(4)))


def test_take_refuses_a_size_mismatch_and_still_unlinks():
    data, name = _export()
    with pytest.raises(errors.DataLossError, match="does not hold"):
        shm.take(name, data.nbytes + 1, memoryview(bytearray(data.nbytes + 1)))
    assert not (shm.SHM_DIR / name).exists()


def test_sender_drops_segments_nobody_took_after_linger(monkeypatch):
    _, forgotten = _export()
    monkeypatch.setattr(shm, "LINGER_S", 0.0)
    _, fresh = _export()
    try:
        assert not (shm.SHM_DIR / forgotten).exists()
    finally:
        shm.release(fresh)


def test_release_own_removes_every_pending_segment():
    names = [_export()[1] for _ in range(3)]
    shm.release_own()
    assert not any((shm.SHM_DIR / name).exists() for name in names)


@pytest.mark.timeout(60)
def test_sweep_removes_segments_of_a_killed_process():
    code = ("import numpy as np, sys, time; from tfteach.distributed import shm; "
            "print(shm.export(memoryview(np.ones(1 << 20, np.uint8))), flush=True); "
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        name = proc.stdout.readline().strip()
        assert (shm.SHM_DIR / name).exists()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert name in shm.sweep_dead()
        assert not (shm.SHM_DIR / name).exists()
    finally:
        proc.kill()
        proc.wait()
