"""Lesson 12 (capstone) passes nbval, leaves no process behind, and its export shows the run,
in every language."""
from __future__ import annotations

import re

import pytest
from lesson_tools import (assert_passes_nbval, assert_stopped_every_task, correct,
                          message_pattern, output_texts, plural_pattern, shown, stored_outputs)

from tfteach import i18n
from tfteach.i18n import tr
from tfteach.notebook.exercises import exercise

LESSON_NAME = "12_capstone.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(lesson, tmp_path):
    assert_stopped_every_task(assert_passes_nbval(lesson, tmp_path))


def test_export_shows_the_run_and_the_result(exported, lang):
    assert 'src="data:image/png;base64,' in exported, "the live loss curves"
    assert "exit codes: [0, 0]" in exported
    assert "test accuracy &gt;= 0.85: True" in exported
    assert shown(exported, tr(exercise("12.1")["direction"], lang=lang)), "a first try's direction"
    assert shown(exported, correct("the job name, task index and worker hosts", lang))
    assert "Stopped the programs and the cluster" in exported


def test_the_lesson_shows_the_program_it_runs(lesson):
    """Section 5 prints the program's main (a ps joins its server) and its build_model."""
    text = output_texts(stored_outputs(lesson, "print(inspect.getsource(program.main))"))
    assert "def main(" in text and "server.join()" in text
    text = output_texts(stored_outputs(lesson, "inspect.getsource(program.build_model)"))
    assert "replica_device_setter" in text and "SyncReplicasOptimizer" in text


def test_two_ps_and_three_workers_run_as_the_tutorial_starts_them(lesson):
    """The five commands name 2 ps hosts and 3 worker hosts, the ps started with
    --job_name=ps; the ps tasks serve until SIGTERM, the workers exit 0, and the chief's
    model learned (>= 0.5, where guessing scores 0.1; these 150 async steps usually reach
    0.90-0.93 here, but scored below 0.85 once in CI, so a higher bar made nbval flaky)."""
    commands = output_texts(stored_outputs(lesson, "tasks[job_name, task_index] = "))
    lines = [line for line in commands.splitlines() if line.startswith("python -m")]
    assert [re.search(r"--job_name=(\w+) --task_index=(\d)", line).groups() for line in lines] \
        == [("ps", "0"), ("ps", "1"), ("worker", "0"), ("worker", "1"), ("worker", "2")]
    assert all(len(re.search(r"--ps_hosts=(\S+)", line).group(1).split(",")) == 2 and
               len(re.search(r"--worker_hosts=(\S+)", line).group(1).split(",")) == 3
               and "--master" not in line for line in lines)
    text = output_texts(stored_outputs(lesson, "ps_serving = all("))
    assert "still serving when the workers ended: True" in text
    assert "exit codes: {'ps:0': -15, 'ps:1': -15, 'worker:0': 0, 'worker:1': 0, " \
           "'worker:2': 0}" in text
    assert "the chief's last line: test accuracy" in text
    assert "test accuracy >= 0.5 (guessing scores 0.1): True" in text


def test_the_supervisor_skeleton_trains_both_workers_to_the_line(lesson):
    """The text: both workers trained the shared w and b to 2 and 1, and exited cleanly."""
    text = output_texts(stored_outputs(lesson, "supervisor_ps = trainer("))
    assert "worker 0: w = 2.00, b = 1.00" in text and "worker 1: w = 2.00, b = 1.00" in text
    assert "worker exit codes: [0, 0]" in text


def test_the_live_curves_have_one_series_per_worker_reaching_the_last_step(lesson, lang):
    """The curves' summary: a line per program (``worker 0``, ``worker 1``, the series the cell
    names), each from one worker, the last reaching the last global step."""
    text = output_texts(stored_outputs(lesson, "curves = LossCurves("))
    one_worker = plural_pattern("{records} records from {n} worker",
                                "{records} records from {n} workers", 1, lang, records=r"\d+")
    last = message_pattern("last loss {loss} at global step {step}", lang, step=r"\d+")
    sep = re.escape(i18n.clauses(["", ""], lang))       # ", " (Chinese: "，")
    steps = {int(m["series"]): int(m["step"]) for m in re.finditer(
        rf"worker (?P<series>\d): {one_worker}{sep}{last}", text)}
    assert set(steps) == {0, 1} and max(steps.values()) >= 200


def test_sync_accepts_one_gradient_per_worker_and_step(lesson):
    """The solution's text: 200 sync steps x 2 workers = 400, give or take one at the end."""
    text = output_texts(stored_outputs(lesson, "sync_workers = [launch(i, ['--sync'"))
    assert "exit codes: [0, 0]" in text
    assert int(re.search(r"accepted gradients: (\d+)", text).group(1)) in (399, 400, 401)


def test_the_whole_trainer_is_checked_through_a_ps_crash(lesson, lang):
    """Exercise 5: the skeleton as given fails in its own processes (the check shows the
    stderr's tail: a name the learner has still to define); the solution's trainer passes the
    check, which kills and restarts the ps while it trains."""
    text = output_texts(stored_outputs(lesson, "check(workdir / 'trainer.py', exercise='12.5')  "))
    exited = message_pattern("the {job} task {task} exited with code {code}; the end of its "
                             "stderr:\n{tail}", lang, code="1", tail="(?s:.*)")
    assert re.search(exited, text) and "NameError" in text
    assert re.search(message_pattern("Not yet: {what}.", lang), text)
    assert tr(exercise("12.5")["direction"], lang=lang) in text
    text = output_texts(stored_outputs(lesson, "%%solution 12.5\ncheck("))
    assert correct(exercise("12.5")["what"], lang) in text
