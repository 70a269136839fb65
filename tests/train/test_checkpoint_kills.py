"""A chief killed with SIGKILL at random points always restarts from a complete checkpoint.

Each scenario runs a chief-like trainer (MonitoredTrainingSession with a checkpoint every
step) in a process forked from one long-lived child that has already imported tfteach, so
a kill costs milliseconds, not an interpreter start. After each kill the test restores the
directory's latest checkpoint in-process and checks it: every variable equals the step it
was saved with, and no step that was once restorable is lost. The next fork restarts the
trainer from the same directory, so each kill also tests the chief's own restore (and the
re-save of the restored step that CheckpointSaverHook does on restart).

Also: the fallback to an older complete checkpoint, and the atomic state file.
"""
import logging
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import tfteach as tf
from tfteach.train import checkpoint_format as cf

SIZE = 50_000          # floats per variable: a save takes some milliseconds
N_VARIABLES = 3

MODEL = f"""
    import tfteach as tf

    def build(max_to_keep):
        step = tf.train.get_or_create_global_step()
        ws = [tf.get_variable(f"layer{{i}}/w", [{SIZE}], initializer=tf.zeros_initializer())
              for i in range({N_VARIABLES})]
        new = step + 1
        updates = [tf.assign(w, tf.fill([{SIZE}], tf.cast(new, tf.float32))) for w in ws]
        with tf.control_dependencies(updates):
            train = tf.assign(step, new)
        return step, ws, train, tf.train.Saver(max_to_keep=max_to_keep)
"""

# The long-lived child: reads "scenario directory" lines, forks a trainer for each, prints
# its pid, then how it ended (the wait status). A trainer only ends by being killed. The
# graphs are built before the fork (no session, hence no threads, exists in this process).
ZYGOTE = MODEL + """
    import os, sys, traceback

    SCENARIOS = {"save": (5, 10**9), "resave": (5, 1), "keep1": (1, 10**9)}
    models = {}

    def model_of(scenario):
        if scenario not in models:
            graph = tf.Graph()
            with graph.as_default():
                models[scenario] = graph, build(SCENARIOS[scenario][0])
        return models[scenario]

    def train_forever(scenario, directory, train, saver):
        steps_per_session = SCENARIOS[scenario][1]
        while True:  # each session restores, re-saves the restored step, then trains
            with tf.train.MonitoredTrainingSession(
                    checkpoint_dir=directory, scaffold=tf.train.Scaffold(saver=saver),
                    save_checkpoint_steps=1, save_summaries_steps=None,
                    save_summaries_secs=None, log_step_count_steps=None) as sess:
                for _ in range(steps_per_session):
                    sess.run(train)

    for line in sys.stdin:
        scenario, directory = line.split()
        graph, (_, _, train, saver) = model_of(scenario)
        pid = os.fork()
        if pid == 0:
            try:
                with graph.as_default():
                    train_forever(scenario, directory, train, saver)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(1)
        print(pid, flush=True)
        print(os.waitpid(pid, 0)[1], flush=True)
"""


class Zygote:
    """The long-lived child that forks trainers for the test to kill."""

    def __init__(self, stderr_path: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(Path(tf.__file__).parent.parent))
        self._stderr_path = stderr_path
        self._stderr = open(stderr_path, "w")
        self._proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(ZYGOTE)], env=env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True, bufsize=1)

    def kill_trainer_after(self, scenario: str, directory: Path, delay_s: float) -> int:
        """Fork a trainer, SIGKILL it after ``delay_s``; returns its wait status."""
        self._proc.stdin.write(f"{scenario} {directory}\n")
        self._proc.stdin.flush()
        pid = int(self._readline())
        time.sleep(delay_s)
        os.kill(pid, signal.SIGKILL)
        return int(self._readline())

    def _readline(self) -> str:
        line = self._proc.stdout.readline()
        assert line, f"the forking child died: {self._stderr_path.read_text()}"
        return line

    def errors(self) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text()

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=30)
        self._stderr.close()


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    child = Zygote(tmp_path_factory.mktemp("zygote") / "stderr.txt")
    yield child
    child.close()


class Restarter:
    """Restores a directory's latest checkpoint in-process, as a restarted chief would."""

    def __init__(self) -> None:
        self._graph = tf.Graph()
        with self._graph.as_default():
            namespace: dict = {}
            exec(textwrap.dedent(MODEL), namespace)
            self._step, self._ws, _, self._saver = namespace["build"](5)
        self._sess = tf.Session(graph=self._graph)

    def restore(self, directory: Path) -> int | None:
        """The step restored from ``directory`` (None: nothing to restore), all checked."""
        path = tf.train.latest_checkpoint(str(directory))
        if path is None:
            return None
        self._saver.restore(self._sess, path)
        step, *ws = self._sess.run([self._step] + self._ws)
        assert path.endswith(f"model.ckpt-{step}"), (path, step)
        for w in ws:
            assert np.all(w == step), f"{path}: variables of another step than {step}"
        return int(step)

    def close(self) -> None:
        self._sess.close()


def _leftovers(directory: Path) -> set[str]:
    """Files a killed save left: temporary files, and data files no index names."""
    names = set(os.listdir(directory))
    named = {os.path.basename(path) for n in names if n.endswith(".index")
             for path in cf.data_files(directory / n[:-len(".index")])}
    return {n for n in names if ".tmp" in n or (".data-" in n and n not in named)}


def _interrupted(new_leftovers: set[str], restored: int | None) -> str:
    """What a kill interrupted, judged from the files it left behind."""
    if any(n.startswith("checkpoint.tmp") for n in new_leftovers):
        return "state file write"
    if any(n.startswith(f"model.ckpt-{restored}.") for n in new_leftovers):
        return "re-save of the restored step"
    return "checkpoint write" if new_leftovers else "no file write"


def _kill_repeatedly(zygote: Zygote, scenario: str, directory: Path, kills: int,
                     max_delay_s: float, seed: int) -> dict[str, int]:
    """Kill a trainer ``kills`` times; after each, the restart must resume, never go back."""
    rng, restarter = random.Random(seed), Restarter()
    interrupted: dict[str, int] = {}
    last = None
    try:
        for kill in range(kills):
            before = _leftovers(directory)
            status = zygote.kill_trainer_after(scenario, directory, rng.uniform(0, max_delay_s))
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, \
                f"the trainer failed before it was killed: {zygote.errors()}"
            step = restarter.restore(directory)
            assert step is not None or last is None, \
                f"kill {kill} (seed {seed}): no checkpoint left to restore, step {last} was"
            assert last is None or step >= last, \
                f"kill {kill} (seed {seed}): restored step {step}, step {last} was lost"
            where = _interrupted(_leftovers(directory) - before, step)
            interrupted[where] = interrupted.get(where, 0) + 1
            last = step
    finally:
        restarter.close()
    assert last is not None and last > 0, "the trainer never completed a save"
    return interrupted


@pytest.mark.slow
@pytest.mark.parametrize("scenario, kills, max_delay_s", [
    ("save", 40, 0.3),       # kills during restore, the re-save, and the saves of training
    ("resave", 40, 0.3),     # each session: restore, re-save that step, one step and save
    ("keep1", 40, 0.3),      # Saver(max_to_keep=1): one checkpoint at a time on disk
])
def test_a_chief_killed_at_random_points_always_restarts_from_a_complete_checkpoint(
        zygote, tmp_path, scenario, kills, max_delay_s):
    interrupted = _kill_repeatedly(zygote, scenario, tmp_path, kills, max_delay_s, seed=kills)
    print(f"{scenario}: {kills} kills, all restarted; interrupted: {interrupted}")
    assert "Traceback" not in zygote.errors()


# ---------------------------------------------------------------- the fallback

def _save(directory: Path, step: int) -> str:
    values = {"w": np.full(4, step, np.float32), "global_step": np.int64(step)}
    return cf.write_checkpoint(directory / f"model.ckpt-{step}", values)


def _three_checkpoints(directory: Path) -> list[str]:
    prefixes = [_save(directory, step) for step in (1, 2, 3)]
    cf.update_checkpoint_state(directory, prefixes[-1], prefixes)
    return prefixes


def test_latest_checkpoint_falls_back_to_the_newest_complete_one_with_a_warning(
        tmp_path, caplog):
    prefixes = _three_checkpoints(tmp_path)
    os.remove(prefixes[2] + ".data-00000-of-00001")
    with caplog.at_level(logging.WARNING, logger="tfteach.train"):
        assert tf.train.latest_checkpoint(str(tmp_path)) == prefixes[1]
    assert prefixes[2] in caplog.text and "skipping" in caplog.text


def test_latest_checkpoint_skips_a_missing_newest_checkpoint(tmp_path):
    prefixes = _three_checkpoints(tmp_path)
    cf.delete_checkpoint(prefixes[2])
    cf.delete_checkpoint(prefixes[1])
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefixes[0]


def test_the_chief_restores_the_newest_complete_checkpoint_when_the_newest_is_gone(tmp_path):
    step = tf.train.get_or_create_global_step()
    w = tf.get_variable("w", [4], initializer=tf.zeros_initializer())
    prefixes = _three_checkpoints(tmp_path)
    os.remove(prefixes[2] + ".index")
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           save_checkpoint_secs=None) as sess:
        assert sess.run(step) == 2 and sess.run(w).tolist() == [2.0] * 4


# ---------------------------------------------------------------- atomic writes

def test_re_saving_a_prefix_replaces_it_without_ever_removing_its_index(tmp_path, monkeypatch):
    prefix = _save(tmp_path, 1)
    removed = []
    real_remove = os.remove
    monkeypatch.setattr(os, "remove", lambda p: (removed.append(p), real_remove(p)))
    cf.write_checkpoint(prefix, {"w": np.full(4, 9, np.float32)})
    assert cf.read_checkpoint(prefix)["w"].tolist() == [9.0] * 4
    assert prefix + ".index" not in removed
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt-1.data-00000-of-00002",
                                            "model.ckpt-1.data-00001-of-00002", "model.ckpt-1.index"]


def test_a_re_save_killed_before_its_index_is_renamed_leaves_the_old_checkpoint(tmp_path):
    prefix = _save(tmp_path, 1)
    (tmp_path / "model.ckpt-1.data-00000-of-00002").write_bytes(b"data a killed re-save renamed")
    assert cf.read_checkpoint(prefix)["w"].tolist() == [1.0] * 4
    cf.write_checkpoint(prefix, {"w": np.full(4, 5, np.float32)})   # the next save cleans up
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt-1.data-00000-of-00002",
                                            "model.ckpt-1.data-00001-of-00002", "model.ckpt-1.index"]
    assert cf.read_checkpoint(prefix)["w"].tolist() == [5.0] * 4


def test_the_state_file_is_replaced_by_a_rename_of_a_synced_temporary_file(tmp_path, monkeypatch):
    prefix = _save(tmp_path, 1)
    cf.update_checkpoint_state(tmp_path, prefix)
    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append(("replace", Path(a).name,
                                                                    Path(b).name)),
                                                     real_replace(a, b)))
    cf.update_checkpoint_state(tmp_path, _save(tmp_path, 2))
    renames = [e for e in events if e != "fsync" and e[2] == "checkpoint"]
    assert len(renames) == 1 and re.fullmatch(r"checkpoint\.tmp\w+", renames[0][1])
    assert events[events.index(renames[0]) - 1] == "fsync"


def test_a_state_file_write_that_fails_midway_leaves_the_old_state_file(tmp_path, monkeypatch):
    first = _save(tmp_path, 1)
    cf.update_checkpoint_state(tmp_path, first)
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        cf.update_checkpoint_state(tmp_path, _save(tmp_path, 2))
    assert cf.get_checkpoint_state(tmp_path).model_checkpoint_path == first
    assert [n for n in os.listdir(tmp_path) if ".tmp" in n] == []


def test_saver_deletes_an_old_checkpoint_only_after_the_state_file_names_the_new_one(
        tmp_path, monkeypatch):
    tf.get_variable("w", [4], initializer=tf.zeros_initializer())
    saver = tf.train.Saver(max_to_keep=1)
    seen_by_delete = []
    real_delete = cf.delete_checkpoint
    monkeypatch.setattr(cf, "delete_checkpoint", lambda p: (
        seen_by_delete.append(cf.get_checkpoint_state(tmp_path).model_checkpoint_path),
        real_delete(p)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
        second = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=2)
    assert seen_by_delete == [second]
