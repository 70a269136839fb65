"""Exercise 12.5: the learner's whole trainer.py, run by the check as 1 ps and 2 workers (real
processes on loopback), with the ps killed and restarted part-way.

The wrong programs are the lesson's solution with one part taken out, so each shows the
behaviour the check diagnoses: no SyncReplicasOptimizer (more global steps than one per two
gradients), no checkpoint_dir (nothing to restore), no replica_device_setter (the ps never
holds the variables), a program that raises (its stderr's tail) and one that hangs (named).
The ladder walks wrong, wrong, wrong, right, no feedback before the solution is asked for
holds a line of it, and no process the check started outlives it.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tfteach.lessons import check, solution
from tfteach.notebook import exercise_checks, exercise_checks_capstone, exercises

NAME = "12.5"
SYNC = """    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(1.0),
                                         replicas_to_aggregate=num_workers,
                                         total_num_replicas=num_workers)"""
SETTER = """with tf.device(tf.train.replica_device_setter(
        worker_device='/job:worker/task:%d' % FLAGS.task_index, cluster=cluster)):"""


@pytest.fixture(autouse=True)
def fresh_tries():
    exercises.forget_tries()
    yield
    exercises.forget_tries()


def _solution_program() -> str:
    """The lesson's solution trainer (its %%writefile cell, without the magic lines)."""
    code = [src for kind, src in solution(NAME).cells if kind == "code"]
    exercises._revealed.discard(NAME)
    program = next(src for src in code if src.startswith("%%writefile"))
    return program.split("\n", 1)[1]


def _changed(program: str, old: str, new: str) -> str:
    assert old in program, old
    return program.replace(old, new)


def _write(folder: Path, name: str, program: str) -> Path:
    path = folder / name / "trainer.py"
    path.parent.mkdir()
    path.write_text(program)
    return path


def _left_running(path: Path) -> list[int]:
    """Processes whose command line names ``path`` (the check's tasks)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(path).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_check_is_registered_for_a_build_exercise():
    assert exercises.exercise(NAME)["kind"] == "build"
    assert NAME in exercise_checks.BUILD_CHECKS


def test_typed_answers_and_a_path_as_text_are_refused_and_not_counted():
    for typed in (0.93, 400, "trainer.py"):
        feedback = check(typed, exercise=NAME)
        assert not feedback and "this check wants" in feedback.problems[0]
        assert "trainer.py" in feedback.problems[0]
    assert exercises.wrong_tries(NAME) == 0


def test_a_missing_file_is_named(tmp_path):
    feedback = check(tmp_path / "trainer.py", exercise=NAME)
    assert not feedback and "there is no file" in feedback.problems[0]


@pytest.mark.cluster
def test_a_program_that_raises_shows_its_stderr_and_leaves_no_process(tmp_path):
    path = _write(tmp_path, "raises", _changed(_solution_program(), "[None, 64]", "[None, 65]"))
    text = " ".join(check(path, exercise=NAME).problems)
    assert "exited with code 1" in text and "Dimensions must be equal" in text
    assert _left_running(path) == []


@pytest.mark.cluster
def test_a_program_that_hangs_is_named_and_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(exercise_checks_capstone, "START_DEADLINE_S", 3.0)
    asleep = _changed(_solution_program(), "local_steps = 0\n",
                      "local_steps = 0\nimport time; time.sleep(600)\n")
    path = _write(tmp_path, "hangs", asleep)
    text = " ".join(check(path, exercise=NAME).problems)
    assert "worker 0, worker 1 did not finish within 3 s and were stopped as hung" in text
    assert _left_running(path) == []


@pytest.mark.slow
@pytest.mark.cluster
def test_a_trainer_that_saves_but_never_restores_goes_back_to_0(tmp_path):
    """Checkpoints saved by a hook, but no checkpoint_dir for the session to restore from:
    after the ps restart the chief initializes again, and the check sees the step fall."""
    saved_only = _changed(_solution_program(), """checkpoint_dir=FLAGS.checkpoint_dir,
                                       save_checkpoint_steps=10, hooks=hooks,""",
                          """chief_only_hooks=[tf.train.CheckpointSaverHook(
                                           FLAGS.checkpoint_dir, save_steps=10)],
                                       hooks=hooks,""")
    path = _write(tmp_path, "saves_only", saved_only)
    text = " ".join(check(path, exercise=NAME).problems)
    assert re.search(r"the global step went back to \d+, below the checkpoint's \d+", text)
    assert "did not restore" in text
    assert _left_running(path) == []


@pytest.mark.slow
@pytest.mark.cluster
def test_wrong_wrong_wrong_right_with_a_ps_crash(tmp_path):
    """Three wrong trainers, each diagnosed by what it did, then the lesson's solution passes
    through the crash; the ladder never shows the solution before it is asked for."""
    info, right = exercises.exercise(NAME), _solution_program()
    no_sync = _changed(_changed(right, SYNC, "    opt = tf.train.GradientDescentOptimizer(1.0)"),
                       "hooks = [opt.make_session_run_hook(is_chief), ", "hooks = [")
    wrongs = [("no_sync", no_sync, "not aggregated"),
              ("no_checkpoint_dir", _changed(right, "checkpoint_dir=FLAGS.checkpoint_dir,",
                                             "checkpoint_dir=None,"), "holds no checkpoint"),
              ("no_setter", _changed(right, SETTER, "if True:"), "not on the ps")]
    lines = [line.strip() for line in right.splitlines() if len(line.strip()) >= 16
             and not line.strip().startswith(("#", "parser.add_argument", "print("))]
    texts = []
    for name, program, diagnosis in wrongs:
        path = _write(tmp_path, name, program)
        feedback = check(path, exercise=NAME)
        assert not feedback and diagnosis in " ".join(feedback.problems), feedback.text()
        assert _left_running(path) == []
        texts.append(feedback.text())
    assert info["direction"] in texts[0] and "solution('12.5')" in texts[0]
    assert info["concept"] in texts[1] and info["section"] in texts[1]
    assert info["hint"] in texts[2]
    for text in texts:
        assert not [line for line in lines if line in text]
    assert exercises.wrong_tries(NAME) == 3
    path = _write(tmp_path, "right", right)
    assert check(path, exercise=NAME), "the lesson's solution passes after three wrong tries"
    assert _left_running(path) == []
