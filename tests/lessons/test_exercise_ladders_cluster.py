"""The feedback ladders of lessons 10 to 12's build exercises (10.3, 10.4, 11.1, 11.2, 12.3,
12.4), walked as a learner would: three different common mistakes, each with its own
diagnosis, then the right build; no feedback before the solution is asked for holds a line of
it (``exercise_ladder``). 10.3 trains on, and 11.1 kills a task of, one LocalCluster (task
processes on loopback) that the module shares; 11.2 runs steps through real in-process
servers. The builders are those of ``test_exercise_gaming`` and ``test_exercise_gaming_cluster``
where they have them."""
from __future__ import annotations

import secrets

import pytest
from exercise_ladder import assert_wrong_wrong_wrong_right, fresh_tries  # noqa: F401
from test_exercise_gaming import backup_worker
from test_exercise_gaming_cluster import sync_worker_of

import tfteach as tf
from tfteach.distributed.transport.processes import free_ports
from tfteach.lessons import check
from tfteach.notebook import exercises

pytestmark = pytest.mark.cluster


def walk(name: str, wrongs: tuple, right: object, diagnoses: tuple[str, ...],
         **kwargs: object) -> None:
    """The ladder of ``name``, each wrong try diagnosed as ``diagnoses`` says."""
    texts = assert_wrong_wrong_wrong_right(name, wrongs, right, **kwargs)
    for text, diagnosis in zip(texts, diagnoses, strict=True):
        assert diagnosis in text, (name, diagnosis, text)


# ---- 10.3 and 10.4: the sync worker, and one with a backup ----------------------------------

def still_async(task_index, num_workers=2):
    """The starter as it stands: a plain optimizer, and no hook."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(tf.zeros([3]), name="w")
        opt = tf.train.GradientDescentOptimizer(1.0)
        train_op = opt.minimize(tf.reduce_sum(tf.square(w)),
                                global_step=tf.train.get_or_create_global_step())
    return graph, train_op, opt, None


def hook_forgotten(task_index, num_workers=2):
    """Step 1 done, step 2 (the hook) left as the starter has it."""
    graph, train_op, opt, _ = backup_worker(task_index, num_workers, replicas=num_workers)
    return graph, train_op, opt, None


def every_worker_chief(task_index, num_workers=2):
    graph, train_op, opt, _ = backup_worker(task_index, num_workers, replicas=num_workers)
    return graph, train_op, opt, opt.make_session_run_hook(is_chief=True)


def no_backup(task_index, num_workers=3):
    """Exercise 3's answer again: every worker's gradient awaited."""
    return backup_worker(task_index, num_workers, replicas=num_workers)


def backup_not_counted(task_index, num_workers=3):
    """The backup left out of the total: two gradients aggregated out of two."""
    return backup_worker(task_index, num_workers - 1, replicas=num_workers - 1)


def test_10_3_wrong_wrong_wrong_right(cluster):
    walk("10.3", (still_async, hook_forgotten, sync_worker_of(cluster, minimize_on_inner=True)),
         sync_worker_of(cluster),
         ("a GradientDescentOptimizer: it does not wait for the workers' gradients",
          "the hook is not the one the optimizer's make_session_run_hook makes",
          "training failed with ValueError"), cluster=cluster)     # minimized with the inner one


def test_10_3_refuses_a_chief_on_every_worker(cluster):
    feedback = check(every_worker_chief, exercise="10.3", cluster=cluster)
    assert feedback.problems == ["the hooks' chief flags are wrong: only worker 0 is the chief"]


def test_10_4_a_changed_default_is_a_new_try():
    """The check calls the function without ``num_workers``: a learner who changes only its
    default has changed the submission (the code alone is the same)."""
    def with_default(n):
        def backup(task_index, num_workers=n):
            return backup_worker(task_index, num_workers, replicas=num_workers - 1)
        return backup

    for n in (2, 4):
        assert not check(with_default(n), exercise="10.4")
    assert exercises.wrong_tries("10.4") == 2
    assert check(with_default(3), exercise="10.4")


# ---- 12.3 and 12.4: functions run in graphs of the check's own ------------------------------

def read_only(train_op, global_step):
    """The starter: a read that nothing orders after the update."""
    return global_step.read_value()


def variable_in_block(train_op, global_step):
    """The variable itself returned from the block: no op is created there, so nothing
    waits for train_op (as in TensorFlow, its fetches read 0, 0, 0)."""
    with tf.control_dependencies([train_op]):
        return global_step


def update_and_read_grouped(train_op, global_step):
    """Both run, but a group is an op: fetching it gives None."""
    return tf.group(train_op, global_step.read_value())


def step_after_update(train_op, global_step):
    with tf.control_dependencies([train_op]):
        return global_step.read_value()


def argmax_down_the_columns(logits, labels):
    return tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 0), labels), tf.float32))


def integer_mean(logits, labels):
    """The booleans cast to the labels' integers: their mean rounds down to 0."""
    return tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.int64))


def correct_count(logits, labels):
    return tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))


def accuracy_op(logits, labels):
    return tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), labels), tf.float32))


NOT_BACKED = "replicas to aggregate or total replicas do not match"
IN_GRAPHS_OF_THE_CHECKS_OWN = [
    ("10.4", (every_worker_chief, no_backup, backup_not_counted), backup_worker,
     ("only worker 0 is the chief", NOT_BACKED, NOT_BACKED)),
    ("12.3", (read_only, variable_in_block, update_and_read_grouped), step_after_update,
     ("does not run the training op: the global step never moves",
      "returns the global step variable itself", "gives None: it is an op that runs")),
    ("12.4", (argmax_down_the_columns, integer_mean, correct_count), accuracy_op,
     ("your function raised ValueError",                   # shapes [10] and [rows]
      "a mean of integers is rounded down", "counts the rows whose class is right")),
]


@pytest.mark.parametrize("name, wrongs, right, diagnoses", IN_GRAPHS_OF_THE_CHECKS_OWN,
                         ids=[row[0] for row in IN_GRAPHS_OF_THE_CHECKS_OWN])
def test_wrong_wrong_wrong_right_in_graphs_of_the_checks_own(name, wrongs, right, diagnoses):
    walk(name, wrongs, right, diagnoses)


# ---- 11.2: the learner submits `first` and changes `second` ----------------------------------

def test_11_2_wrong_wrong_wrong_right(monkeypatch):
    """Each try starts `second` again with a token and submits `first`, as the lesson does:
    the starter's guess, two other wrong tokens, then the notebook's own. The submission is
    the same server each time: every check of it counts as a try."""
    token = secrets.token_hex(8)
    monkeypatch.setenv("TFTEACH_CLUSTER_TOKEN", token)       # what the sessions send
    two = tf.train.ClusterSpec({"worker": [f"localhost:{p}" for p in free_ports(2)]})
    first = tf.train.Server(two, job_name="worker", task_index=0, token=token)
    seconds = []

    def second_with(guess: str) -> tf.train.Server:
        if seconds:
            seconds[-1].stop()                               # frees task 1's port
        seconds.append(tf.train.Server(two, job_name="worker", task_index=1, token=guess))
        return first

    try:
        walk("11.2", ("my-guess", "my-other-guess", token[::-1]), token,
             ("the step failed with UnauthenticatedError",) * 3, prepare=second_with)
    finally:
        for server in (first, *seconds):
            server.stop()


# ---- 11.1 last: its check kills worker 0 ----------------------------------------------------

def test_11_1_wrong_wrong_wrong_right(cluster):
    def config(*filters):
        return tf.ConfigProto(operation_timeout_in_ms=1000, device_filters=list(filters))

    walk("11.1", (config(), config("/job:worker/task:1"), config("/job:ps", "/job:worker")),
         config("/job:ps", "/job:worker/task:1"),
         ("the step failed with UnavailableError",          # it waits for worker 0
          "the step failed with InvalidArgumentError",      # the ps filtered out
          "the step failed with UnavailableError"),         # every worker: worker 0 too
         cluster=cluster)
