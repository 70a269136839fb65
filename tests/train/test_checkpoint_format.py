"""The checkpoint files behind tf.train.Saver: round trips, the state file, corruption,
and writers killed with SIGKILL in the middle of a save."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tfteach
from tfteach.errors import DataLossError, InvalidArgumentError, NotFoundError
from tfteach.train.checkpoint_format import (
    checkpoint_exists, delete_checkpoint, get_checkpoint_state, latest_checkpoint,
    read_checkpoint, read_index, update_checkpoint_state, write_checkpoint)

TENSORS = {
    "layer1/weights": np.arange(6, dtype=np.float32).reshape(2, 3),
    "layer1/bias": np.array([0.5, -1.5], dtype=np.float16),
    "scale": np.array(2.25, dtype=np.float64),                      # 0-d
    "global_step": np.array(100, dtype=np.int64),
    "counts": np.array([[1, 2], [3, 4]], dtype=np.int32),
    "mask": np.array([True, False, True]),
    "empty": np.zeros((0, 4), dtype=np.float32),
}


def _save(directory, name="model.ckpt-1", tensors=TENSORS):
    return write_checkpoint(os.path.join(directory, name), tensors)


def test_round_trip_keeps_values_dtypes_and_shapes(tmp_path):
    restored = read_checkpoint(_save(tmp_path))
    assert sorted(restored) == sorted(TENSORS)
    for name, value in TENSORS.items():
        assert restored[name].dtype == value.dtype, name
        assert restored[name].shape == value.shape, name
        assert np.array_equal(restored[name], value), name


def test_restored_arrays_can_be_changed_in_place(tmp_path):
    restored = read_checkpoint(_save(tmp_path))
    restored["layer1/weights"] += 1
    assert restored["layer1/weights"][0, 0] == 1


def test_a_checkpoint_is_tfs_index_plus_one_data_file_and_nothing_else(tmp_path):
    prefix = _save(tmp_path)
    assert prefix == str(tmp_path / "model.ckpt-1")
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt-1.data-00000-of-00001",
                                            "model.ckpt-1.index"]


def test_the_data_file_holds_each_tensors_raw_bytes_where_the_index_says(tmp_path):
    prefix = _save(tmp_path)
    data = Path(prefix + ".data-00000-of-00001").read_bytes()
    entry = read_index(prefix)["layer1/weights"]
    raw = TENSORS["layer1/weights"].astype("<f4").tobytes()
    assert data[entry.offset:entry.offset + entry.size] == raw
    assert len(data) == sum(v.nbytes for v in TENSORS.values())


def test_read_index_gives_dtypes_and_shapes_without_the_data_file(tmp_path):
    prefix = _save(tmp_path)
    os.remove(prefix + ".data-00000-of-00001")
    index = read_index(prefix)
    assert list(index) == sorted(TENSORS)
    assert index["layer1/weights"].dtype == "float32"
    assert index["layer1/weights"].shape == (2, 3)
    assert index["scale"].shape == () and index["mask"].dtype == "bool"


def test_names_that_are_numpy_keywords_are_saved_like_any_other(tmp_path):
    tensors = {"file": np.ones(2), "allow_pickle": np.zeros(3), "x.npy": np.arange(2)}
    restored = read_checkpoint(_save(tmp_path, tensors=tensors))
    assert all(np.array_equal(restored[k], v) for k, v in tensors.items())


def test_big_endian_input_is_stored_little_endian_with_the_same_values(tmp_path):
    value = np.arange(4, dtype=">i4")
    restored = read_checkpoint(_save(tmp_path, tensors={"v": value}))["v"]
    assert restored.dtype.str == "<i4" and restored.tolist() == [0, 1, 2, 3]


def test_object_arrays_are_refused(tmp_path):
    with pytest.raises(InvalidArgumentError, match="'names' of dtype object") as info:
        _save(tmp_path, tensors={"names": np.array(["a", None], dtype=object)})
    assert info.value.hint
    assert os.listdir(tmp_path) == []


def test_saving_into_a_missing_directory_creates_it(tmp_path):
    write_checkpoint(tmp_path / "nowhere" / "model.ckpt", TENSORS)
    assert (tmp_path / "nowhere" / "model.ckpt.index").is_file()


def test_saving_where_no_directory_can_be_made_is_not_found(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(NotFoundError, match="doesn't exist") as info:
        write_checkpoint(tmp_path / "file" / "model.ckpt", TENSORS)
    assert "folder you can create" in info.value.hint


def test_overwriting_a_prefix_replaces_its_values(tmp_path):
    _save(tmp_path)
    prefix = _save(tmp_path, tensors={"w": np.full(3, 7.0)})
    assert list(read_checkpoint(prefix)) == ["w"]
    assert read_checkpoint(prefix)["w"].tolist() == [7.0, 7.0, 7.0]


def test_a_missing_checkpoint_is_not_found_and_the_hint_lists_the_ones_there(tmp_path):
    _save(tmp_path, "model.ckpt-5")
    with pytest.raises(NotFoundError) as info:
        read_checkpoint(tmp_path / "model.ckpt-6")
    assert str(tmp_path / "model.ckpt-6") in info.value.message
    assert "model.ckpt-5" in info.value.hint and "latest_checkpoint" in info.value.hint


def test_passing_a_file_name_instead_of_the_prefix_gets_a_hint(tmp_path):
    prefix = _save(tmp_path)
    with pytest.raises(NotFoundError) as info:
        read_checkpoint(prefix + ".index")
    assert repr(prefix) in info.value.hint


def test_a_flipped_byte_in_the_data_is_data_loss(tmp_path):
    prefix = _save(tmp_path, tensors={"w": np.arange(1000, dtype=np.int64)})
    raw = bytearray(Path(prefix + ".data-00000-of-00001").read_bytes())
    raw[4000] ^= 0xFF
    Path(prefix + ".data-00000-of-00001").write_bytes(bytes(raw))
    with pytest.raises(DataLossError, match="model.ckpt-1.data-00000-of-00001") as info:
        read_checkpoint(prefix)
    assert "Hint:" in str(info.value)


def test_a_data_file_shorter_than_the_index_says_is_data_loss(tmp_path):
    prefix = _save(tmp_path, tensors={"w": np.zeros(3)})
    Path(prefix + ".data-00000-of-00001").write_bytes(bytes(16))
    with pytest.raises(DataLossError, match="runs past the end of the data file"):
        read_checkpoint(prefix)


def test_a_garbled_index_is_data_loss(tmp_path):
    prefix = _save(tmp_path)
    raw = bytearray(Path(prefix + ".index").read_bytes())
    raw[10] ^= 0xFF
    Path(prefix + ".index").write_bytes(bytes(raw))
    with pytest.raises(DataLossError, match=r"\.index is corrupt: block checksum mismatch"):
        read_index(prefix)


def test_a_truncated_index_is_data_loss(tmp_path):
    prefix = _save(tmp_path)
    Path(prefix + ".index").write_bytes(Path(prefix + ".index").read_bytes()[:-1])
    with pytest.raises(DataLossError, match="no table magic number"):
        read_index(prefix)


def test_an_index_without_its_data_file_is_data_loss(tmp_path):
    prefix = _save(tmp_path)
    os.remove(prefix + ".data-00000-of-00001")
    with pytest.raises(DataLossError, match="missing although its index exists"):
        read_checkpoint(prefix)


def test_delete_removes_the_checkpoint_and_leftover_temp_files(tmp_path):
    prefix = _save(tmp_path)
    Path(prefix + ".data-00000-of-00001.tmp1234abcd").write_bytes(b"half")
    assert checkpoint_exists(prefix)
    delete_checkpoint(prefix)
    assert not checkpoint_exists(prefix) and os.listdir(tmp_path) == []
    delete_checkpoint(prefix)  # deleting twice is harmless


def test_saving_removes_temp_files_a_killed_save_of_the_same_prefix_left(tmp_path):
    stale = tmp_path / "model.ckpt-1.data-00000-of-00001.tmp0badf00d"
    stale.write_bytes(b"half a checkpoint")
    _save(tmp_path)
    assert not stale.exists()


# ---------------------------------------------------------------- the state file

def test_the_state_file_is_tf_text_format_with_relative_paths(tmp_path):
    first, second = _save(tmp_path, "model.ckpt-50"), _save(tmp_path, "model.ckpt-100")
    update_checkpoint_state(tmp_path, second, [first, second])
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "model.ckpt-100"\n'
        'all_model_checkpoint_paths: "model.ckpt-50"\n'
        'all_model_checkpoint_paths: "model.ckpt-100"\n')
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_the_newest_is_always_listed_last_among_the_kept(tmp_path):
    a, b = _save(tmp_path, "a"), _save(tmp_path, "b")
    update_checkpoint_state(tmp_path, a, [a, b])
    assert get_checkpoint_state(tmp_path).all_model_checkpoint_paths == [b, a]
    update_checkpoint_state(tmp_path, b)
    assert get_checkpoint_state(tmp_path).all_model_checkpoint_paths == [b]


def test_get_checkpoint_state_joins_the_paths_with_the_directory(tmp_path):
    first, second = _save(tmp_path, "model.ckpt-1"), _save(tmp_path, "model.ckpt-2")
    update_checkpoint_state(str(tmp_path), second, [first, second])
    state = get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == second
    assert state.all_model_checkpoint_paths == [first, second]


def test_a_checkpoint_outside_the_directory_is_recorded_absolute(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "train").mkdir()
    outside = _save(tmp_path / "elsewhere")
    update_checkpoint_state(tmp_path / "train", outside)
    assert f'model_checkpoint_path: "{outside}"' in (tmp_path / "train/checkpoint").read_text()
    assert latest_checkpoint(tmp_path / "train") == outside


def test_paths_with_quotes_and_backslashes_survive_the_state_file(tmp_path):
    prefix = _save(tmp_path, 'my "best" \\ model')
    update_checkpoint_state(tmp_path, prefix)
    assert latest_checkpoint(tmp_path) == prefix


def test_a_state_file_written_by_tensorflow_is_understood(tmp_path):
    prefix = _save(tmp_path, "model.ckpt-7")
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model.ckpt-7"\n'
        'all_model_checkpoint_paths: "model.ckpt-7"\n'
        'all_model_checkpoint_timestamps: 1591234567.89\n'
        'last_preserved_timestamp: 1591234000.5\n')
    assert latest_checkpoint(tmp_path) == prefix


def test_latest_checkpoint_is_none_without_a_state_file(tmp_path):
    assert get_checkpoint_state(tmp_path) is None
    assert latest_checkpoint(tmp_path) is None
    assert latest_checkpoint(tmp_path / "no_such_dir") is None


def test_latest_checkpoint_is_none_when_the_named_checkpoint_is_gone(tmp_path):
    prefix = _save(tmp_path)
    update_checkpoint_state(tmp_path, prefix)
    delete_checkpoint(prefix)
    with pytest.warns(UserWarning, match="Couldn't match files"):
        assert latest_checkpoint(tmp_path) is None


def test_a_malformed_state_file_is_ignored_with_a_warning(tmp_path):
    (tmp_path / "checkpoint").write_text("model_checkpoint_path = model.ckpt-1\n")
    with pytest.warns(UserWarning, match="Checkpoint ignored"):
        assert get_checkpoint_state(tmp_path) is None


# ---------------------------------------------------------------- killed in the middle of a save

def _child(script: str, *args: str) -> subprocess.Popen:
    """A Python process running ``script`` with tfteach importable."""
    env = dict(os.environ, PYTHONPATH=str(Path(tfteach.__file__).parent.parent))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script), *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _step(prefix: str) -> int:
    return int(re.search(r"model\.ckpt-(\d+)$", prefix).group(1))


def _assert_every_visible_checkpoint_is_whole(directory: Path):
    """Each prefix that has an index reads back with checksums and step-valued data."""
    for index in directory.glob("*.index"):
        prefix = str(index)[:-len(".index")]
        tensors = read_checkpoint(prefix)
        assert tensors["step"] == _step(prefix)
        assert np.all(tensors["big"] == _step(prefix))


SAVE_FOREVER = """
    import sys, numpy as np
    from tfteach.train import checkpoint_format as cf
    directory, kept = sys.argv[1], []
    big = np.zeros(16_000_000, np.float32)            # 64 MB: a save takes a while
    for step in range(1, 1_000_000):                   # saves until it is killed
        big[:] = step
        prefix = cf.write_checkpoint(f"{directory}/model.ckpt-{step}",
                                     {"big": big, "step": np.int64(step)})
        kept.append(prefix)
        old = kept.pop(0) if len(kept) > 2 else None   # keep 2, as Saver(max_to_keep=2)
        cf.update_checkpoint_state(directory, prefix, kept)
        if old:
            cf.delete_checkpoint(old)
"""


def test_a_saver_killed_while_writing_leaves_the_previous_checkpoint_usable(tmp_path):
    child = _child(SAVE_FOREVER, str(tmp_path))
    try:
        temp = None
        while temp is None:  # wait for the third save to start writing its data
            assert child.poll() is None, child.stderr.read()
            temp = next((n for n in os.listdir(tmp_path)
                         if re.fullmatch(r"model\.ckpt-([3-9]|\d\d+)\.data-\d{5}-of-\d{5}\.tmp\w+",
                                         n)),
                        None)
            time.sleep(0.001)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    killed = int(re.match(r"model\.ckpt-(\d+)", temp).group(1))
    latest = latest_checkpoint(tmp_path)
    assert latest == str(tmp_path / f"model.ckpt-{killed - 1}")
    assert read_checkpoint(latest)["step"] == killed - 1
    assert not checkpoint_exists(tmp_path / f"model.ckpt-{killed}")
    with pytest.raises(NotFoundError):
        read_checkpoint(tmp_path / f"model.ckpt-{killed}")
    for prefix in get_checkpoint_state(tmp_path).all_model_checkpoint_paths:
        assert checkpoint_exists(prefix)
    _assert_every_visible_checkpoint_is_whole(tmp_path)


KILL_AT = """
    import os, signal, sys, numpy as np
    from tfteach.train import checkpoint_format as cf
    directory, target, nth = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def save(step, size):
        prefix = cf.write_checkpoint(f"{directory}/model.ckpt-{step}",
                                     {"big": np.full(size, step, np.float32),
                                      "step": np.int64(step)})
        cf.update_checkpoint_state(directory, prefix, [prefix])

    def is_target(function):
        if target == "write":  # a write into a temporary file that already holds 1 MB
            owner = getattr(function, "__self__", None)
            return (function.__name__ == "write" and ".tmp" in str(getattr(owner, "name", ""))
                    and owner.tell() > 1_000_000)
        return function is getattr(os, target)

    calls = 0
    def kill_at_nth_call(frame, event, function):
        global calls
        if event == "c_call" and is_target(function):
            calls += 1
            if calls == nth:
                os.kill(os.getpid(), signal.SIGKILL)

    save(1, 1000)
    sys.setprofile(kill_at_nth_call)
    save(2, 8_000_000)  # 32 MB, then the step: the kill at "write" falls between the two
"""


@pytest.mark.parametrize("target, nth, leftover, second_complete", [
    ("write", 1, r"model\.ckpt-2\.data-00000-of-00001\.tmp\w+", False),  # data half written
    ("fsync", 1, r"model\.ckpt-2\.data-00000-of-00001\.tmp\w+", False),  # written, not synced
    ("replace", 2, r"model\.ckpt-2\.index\.tmp\w+", False),  # data in place, index not
    ("replace", 3, r"checkpoint\.tmp\w+", True),                   # state file not renamed
])
def test_a_save_killed_at_each_step_never_exposes_a_partial_checkpoint(
        tmp_path, target, nth, leftover, second_complete):
    child = _child(KILL_AT, str(tmp_path), target, str(nth))
    _, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, err
    temps = [p for p in tmp_path.iterdir() if re.fullmatch(leftover, p.name)]
    assert len(temps) == 1 and temps[0].stat().st_size > 0  # killed where we meant to
    first, second = str(tmp_path / "model.ckpt-1"), str(tmp_path / "model.ckpt-2")
    assert latest_checkpoint(tmp_path) == first
    assert read_checkpoint(first)["step"] == 1
    assert get_checkpoint_state(tmp_path).all_model_checkpoint_paths == [first]
    assert checkpoint_exists(second) == second_complete
    _assert_every_visible_checkpoint_is_whole(tmp_path)
