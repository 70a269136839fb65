"""Lesson 11 passes nbval, leaves no task process behind, and its export shows each failure
explained, in every language."""
from __future__ import annotations

import html
import re

import pytest
from lesson_tools import (assert_passes_nbval, assert_stopped_every_task, code_spans,
                          counterpart, hint_label, message_pattern, output_texts, shown, stored_outputs)

from tfteach.i18n import tr

LESSON_NAME = "11_when_things_go_wrong.ipynb"

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_lesson_passes_nbval_and_stops_every_task(lesson, tmp_path):
    assert_stopped_every_task(assert_passes_nbval(lesson, tmp_path))


def test_export_shows_every_failure_with_its_hint(exported, lang):
    hint = re.escape(hint_label(lang))
    for error, detail in [("UnavailableError", "no response from worker: /job:ps/replica:0/task:0"),
                          ("UnavailableError", "Task /job:worker/replica:0/task:1"),
                          ("AbortedError", "Graph handle is not found"),
                          ("FailedPreconditionError", "uninitialized value"),
                          ("PermissionDeniedError", "without a cluster token"),
                          ("UnauthenticatedError", "wrong cluster token for task "
                                                   "/job:worker/replica:0/task:1")]:
        assert re.search(rf"<b>{error}</b>.*?{re.escape(detail)}.*?<b>{hint}</b>", exported,
                         re.S), error
    assert "restoring model.ckpt-20" in exported and "step 20: w = 2.312" in exported
    assert re.search(r"25 ps restarted\s+21 22 .* 40\b", exported), "MonitoredTrainingSession"
    passed = message_pattern("Correct: {what}. Well done!", lang, what=r"[^<\n]+?")
    assert len(re.findall(passed, html.unescape(exported))) == 2, "both exercises' solutions"
    assert shown(exported, tr("Stopped the cluster", lang=lang))
    assert "TFTEACH_CLUSTER_TOKEN=" not in exported, "the token is never shown"


PORT_IN_USE = ("{task} could not listen on {address}: the port is in use (another notebook or "
               "tfteach-server?) or the host is not an address of this machine. Stop the other "
               "server, or pick another port in the ClusterSpec.")


def test_two_tasks_started_as_worker_0_leave_worker_1_missing(lesson, lang):
    """The text: the second `--task 0` cannot get worker 0's port (its hint says why), and a
    session to worker 0 then waits for task 1."""
    text = output_texts(stored_outputs(lesson, "both_task_0 = [subprocess.Popen("))
    assert "exit codes: [1, 'running']" in text
    assert "Cannot start server" in text
    port_in_use = message_pattern(PORT_IN_USE, lang, task=re.escape("/job:worker/replica:0/task:0"))
    assert re.search(port_in_use, text), "the hint says why: the port is taken"
    text = output_texts(stored_outputs(lesson, "tf.Session('grpc://' + two_workers['worker'][0]"))
    assert "no response from worker: /job:worker/replica:0/task:1" in text


def test_the_wrong_address_section_names_the_error_and_the_call_that_hangs(lesson):
    """The section on wrong addresses: tfteach fails at once with `UnavailableError`, while
    TensorFlow (a sentence in bold) keeps retrying, so a first `session.run` hangs."""
    text = counterpart(lesson, "Two classic typos").source
    assert {"UnavailableError", "session.run"} <= set(code_spans(text))
    assert re.search(r"\*\*[^*\n]+\*\*", text), "the bold sentence on TensorFlow retrying"


def test_a_filtered_session_lists_only_its_worker_and_runs_without_the_ps(lesson):
    marker = "config = tf.ConfigProto(device_filters=['/job:worker"
    text = output_texts(stored_outputs(lesson, marker))
    lines = text.split()
    assert lines[:2] == ["[3.", "6.]"]
    assert lines[2:] and all(d.startswith("/job:worker/replica:0/task:0/") for d in lines[2:])


def test_a_restored_ps_continues_from_the_checkpoint_state(lesson):
    """The text: restoring model.ckpt-20 gives back exactly the state saved at step 20; the 10
    steps after it are lost."""
    saved = output_texts(stored_outputs(lesson, "path = saver.save(sess, "))
    restored = output_texts(stored_outputs(lesson, "latest = tf.train.latest_checkpoint("))
    state_20 = re.search(r"step 20: .*", saved).group(0)
    assert "step 30:" in saved
    assert restored.splitlines() == ["restoring model.ckpt-20", state_20]


def test_the_same_step_runs_again_on_a_new_session_after_the_worker_restarts(lesson):
    before = output_texts(stored_outputs(lesson, "with tf.device('/job:worker/task:1'):"))
    after = output_texts(stored_outputs(lesson, "sess = tf.Session(cluster.target('worker', 0))\n"
                                                "print(sess.run(y))"))
    assert before.strip().endswith("[10. 20.]") and after.strip() == "[10. 20.]"


def test_device_filters_leave_the_task_with_the_other_token_alone(lesson):
    text = output_texts(stored_outputs(lesson, "device_filters=['/job:worker/task:0'])).run(z)"))
    assert text.strip() == "42.0"


def test_the_text_after_the_uninitialized_error_says_why_its_hint_does_not_apply(lesson):
    """The box's hint says to run the initializer; the next text says that is the remedy for
    variables never set, not for trained ones, and restores the checkpoint instead."""
    box = output_texts(stored_outputs(lesson, "sess = tf.Session(target)\ntry:\n    show_state(sess)"))
    assert "uninitialized value" in box and "tf.global_variables_initializer()" in box
    text = counterpart(lesson, "The error's hint,").source
    assert {"sess.run(tf.global_variables_initializer())",
            "tf.train.latest_checkpoint(dir)"} <= set(code_spans(text))
