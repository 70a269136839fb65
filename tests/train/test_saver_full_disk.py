"""Saving onto a full disk: ResourceExhaustedError naming the file (TF maps ENOSPC so), with
a hint, and no file of the failed save left behind, whichever file found no room. The disk
is a real 64 KiB tmpfs mounted for the test (root only; skipped elsewhere)."""
from __future__ import annotations

import os
import subprocess

import pytest

import tfteach as tf
from tfteach import errors

PAGE = 4096
SIZE = 16 * PAGE


@pytest.fixture
def full_disk(tmp_path):
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs",
                              str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode()[-200:]}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _save(folder, floats):
    """Save one float32 variable of ``floats`` values into ``folder``."""
    with tf.Graph().as_default():
        tf.Variable(tf.zeros([floats]), name="v")
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            with pytest.raises(errors.ResourceExhaustedError) as caught:
                tf.train.Saver().save(session, str(folder / "model"))
    return caught.value


@pytest.mark.parametrize("floats,which", [
    (100_000, ".data-00000-of-00001"),      # the data itself does not fit
    (SIZE // 4, ".index"),                  # the data fills the disk: no room for the index
    ((SIZE - PAGE) // 4, "checkpoint"),     # data and index fit: no room for the state file
], ids=["data", "index", "state"])
def test_a_save_onto_a_full_disk_is_resource_exhausted_and_leaves_nothing(
        full_disk, floats, which):
    err = _save(full_disk, floats)
    assert str(full_disk) in err.message and which in err.message
    assert "No space left on device" in err.message
    assert "Hint:" in str(err) and str(full_disk) in str(err).split("Hint:")[1]
    assert os.listdir(full_disk) == []
