"""What a build exercise's check runs, and what a predict exercise's answer is built from.

A build exercise (``"kind": "build"`` in ``exercises.json``) is checked on what the learner
built (a function, a graph, a config, a server), never on numbers: ``BUILD_CHECKS[name]``
runs it on hidden, randomised inputs and returns the problems it found, each naming the part
that is wrong and the kind of mistake, and never the expected value. ``PREDICTED[name]``
builds, in a graph of the package's own, the answer a predict exercise compares with.

A checker is ``check(built, context) -> list[str]``; ``context`` holds what the lesson passes
beside (``cluster=``). It raises ``WrongKind`` when ``built`` is not the kind of thing the
exercise asks for. Where what was built is itself the whole answer (a ClusterSpec, a graph
whose pending counts are asked for), ``DERIVED[name](built)`` reads the value from it, and the
check compares that with the exercise's answer.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from tfteach.framework.device_spec import DeviceSpec
from tfteach.i18n import join, tr
from tfteach.notebook import exercise_checks_placement, exercise_checks_towers
from tfteach.train.hooks import SessionRunHook


class WrongKind(Exception):
    """The submission is not the kind of thing a build exercise checks."""


def _rng() -> random.Random:
    return random.Random()          # a new seed each check: the inputs cannot be guessed


def _same_device(got: Any, wanted: str) -> bool:
    try:
        spec = got if isinstance(got, DeviceSpec) else DeviceSpec.from_string(got or "")
    except (TypeError, ValueError):
        return False
    return spec.to_string() == DeviceSpec.from_string(wanted).to_string()


# ---- 5.4: a batch split over towers in proportion to their speeds ------------------------------

def _split_case(rng: random.Random, k: int) -> tuple:
    """A batch of a random size that no number of towers up to 4 divides, with speeds of
    which no two are equal, in a random order."""
    n = 12 * rng.randint(8, 50) + 1
    ids = np.array(rng.sample(range(10**6), n))
    x = np.stack([ids, ids * 2 + 1], axis=1).astype(np.float32)
    y = ids * 7 + 3                                    # a label that names its row
    speeds = rng.sample([0.3, 0.5, 1.0, 1.5, 2.0], k)
    return x, y, speeds


def check_feed_in_proportion(build: Any, context: dict) -> list[str]:
    """``build`` on three hidden batches (2, 3 and 4 towers); what is wrong, in a fixed
    order and without the hidden numbers, so that the same mistake reads the same."""
    if not callable(build):
        raise WrongKind
    rng, found = _rng(), []
    for k in (2, 3, 4):
        x, y, speeds = _split_case(rng, k)
        xs, ys = [f"x_{i}" for i in range(k)], [f"y_{i}" for i in range(k)]
        try:
            slices = build(xs, ys, x, y, speeds)
        except Exception as error:         # the learner's code: any error is feedback
            return [tr("the function raised {error}", error=type(error).__name__)]
        found += [p for p in _split_problems(slices, xs, ys, x, y, speeds) if p not in found]
    return found


def _split_problems(slices: Any, xs: list, ys: list, x: np.ndarray, y: np.ndarray,
                    speeds: list[float]) -> list[str]:
    if not isinstance(slices, dict):
        return [tr("the function does not return a dict from the names in xs and ys to "
                   "their slices")]
    if any(name not in slices for name in xs + ys):
        return [tr("some names of xs or ys have no slice")]
    rows = [np.asarray(slices[name]) for name in xs]
    labels = [np.asarray(slices[name]) for name in ys]
    problems = exercise_checks_towers.cover_problems(rows, x)
    if any(len(r) != len(lab) or not np.array_equal(r[:, 0] * 7 + 3, lab)
           for r, lab in zip(rows, labels, strict=True)):
        problems.append(tr("the labels do not travel with their rows: a tower gets labels "
                           "of rows it did not get"))
    total, n = sum(speeds), len(x)
    if not problems and any(abs(len(r) - n * s / total) > 1
                            for r, s in zip(rows, speeds, strict=True)):
        problems.append(tr("a tower's share is off by more than one row from its share of "
                           "the speeds"))
    return problems


# ---- 11.1 and 11.2: a step that runs on the cluster ---------------------------------------------

def check_filtered_step(config: Any, context: dict) -> list[str]:
    """A step through worker 1's session with ``config`` while worker 0 is dead."""
    import tfteach as tf

    if not isinstance(config, tf.ConfigProto):
        raise WrongKind
    cluster = _cluster(context)
    if cluster.alive("worker", 0):
        cluster.kill("worker", 0)
    start = round(_rng().uniform(-50, 50), 3)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(start, name="exercise_v")
        with tf.device("/job:worker/task:1"):
            doubled = v * 2.0
        return _run_step(lambda: _run(tf.Session(cluster.target("worker", 1), config=config),
                                      [v.initializer], doubled), 2 * start)


def check_shared_token(server: Any, context: dict) -> list[str]:
    """A step on task 1 through a session to ``server`` (task 0)."""
    import tfteach as tf

    if not isinstance(server, tf.train.Server):
        raise WrongKind
    factor = round(_rng().uniform(1, 99), 2)
    with tf.Graph().as_default():
        with tf.device("/job:worker/task:1"):
            answer = tf.constant(factor) * 2.0
        config = tf.ConfigProto(operation_timeout_in_ms=5000)
        return _run_step(lambda: _run(tf.Session(server.target, config=config), [], answer),
                         2 * factor)


def _cluster(context: dict) -> Any:
    cluster = context.get("cluster")
    if cluster is None:
        raise TypeError("this exercise's check needs the lesson's cluster: check(..., "
                        "cluster=cluster)")
    return cluster


def _run(session: Any, first: list, fetch: Any) -> float:
    with session:
        for op in first:
            session.run(op)
        return float(session.run(fetch))


def _run_step(step: Callable[[], float], wanted: float) -> list[str]:
    from tfteach import errors

    try:
        got = step()
    except errors.OpError as error:
        return [tr("the step failed with {error}", error=type(error).__name__)]
    if not np.isclose(got, wanted, atol=1e-4):
        return [tr("the step ran but did not compute the value of the hidden test")]
    return []


# ---- 2.1: a device function ---------------------------------------------------------------------

TABLE_2_1 = {"VariableV2": "/cpu:0", "MatMul": "/gpu:1"}     # everything else: /gpu:0


def _name(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))


def check_device_function(device_fn: Any, context: dict) -> list[str]:
    """``device_fn`` on every op of a small model with names it cannot know."""
    import tfteach as tf

    if not callable(device_fn) or isinstance(device_fn, (DeviceSpec, type)):
        raise WrongKind
    rng = _rng()
    with tf.Graph().as_default() as graph:
        x = tf.constant([[rng.random(), rng.random()]], name=_name(rng))
        w = tf.Variable([[1.0], [rng.random()]], name=_name(rng))
        b = tf.Variable([rng.random()], name=_name(rng))
        tf.add(tf.matmul(x, w, name=_name(rng)), b, name=_name(rng))
    problems: dict[str, str] = {}
    for op in graph.get_operations():
        if op.type in problems:
            continue
        try:
            got = device_fn(op)
        except Exception as error:         # the learner's code: any error is feedback
            return [tr("your function raised {error} on an op of type {type}",
                       error=type(error).__name__, type=op.type)]
        if not _same_device(got, TABLE_2_1.get(op.type, "/gpu:0")):
            problems[op.type] = _device_problem(device_fn, op.type, got)
    return list(problems.values())


def _device_problem(device_fn: Any, op_type: str, got: Any) -> str:
    """Why ops of ``op_type`` got the wrong device ``got``: a test of the type ``'Variable'``
    (no op has it), or just which device."""
    if op_type == "VariableV2" and exercise_checks_placement.looks_for_type_variable(device_fn):
        return tr("your function looks for ops of type 'Variable', and no op has that type; "
                  "TF 1.x's variables are ops of type 'VariableV2'")
    return tr("ops of type {type} get {device} from your function, not the device the table "
              "gives them", type=op_type, device=repr(got))


# ---- 8.2 and 8.3: variables balanced over ps tasks ----------------------------------------------

def check_greedy_setter(make_setter: Any, context: dict) -> list[str]:
    """Variables of random sizes, created under ``make_setter()``'s device function: each
    must go to the ps task that holds the fewest bytes when it is created."""
    import tfteach as tf

    if not callable(make_setter) or isinstance(make_setter, tf.Graph):
        raise WrongKind
    rng = _rng()
    for _ in range(2):
        sizes = sorted(rng.sample([8, 24, 40, 96, 200, 512, 1000, 2048], rng.randint(4, 7)))
        sizes = [sizes[-1]] + rng.sample(sizes[:-1], len(sizes) - 1)   # the largest first
        with tf.Graph().as_default():
            with tf.device(make_setter()):
                made = [tf.Variable(np.zeros([n], np.float32), name=_name(rng)) for n in sizes]
            problems = _greedy_problems(made)
        if problems:
            return problems
    return []


def _greedy_problems(variables: list) -> list[str]:
    loads = [0, 0, 0]
    for v in variables:
        spec = DeviceSpec.from_string(v.device)
        if spec.job != "ps" or spec.task is None or spec.task >= len(loads):
            return [tr("a variable was placed on {device}, not on one of the three ps tasks",
                       device=v.device or "''")]
        if loads[spec.task] > min(loads):
            return [tr("a variable went to a ps task that already held more bytes than "
                       "another one: the strategy does not balance bytes")]
        loads[spec.task] += v.shape.num_elements() * v.dtype.base_dtype.size
    return []


MODEL_8 = {"w1": [64, 32], "b1": [32], "w2": [32, 10], "b2": [10]}


def check_hand_balance(graph: Any, context: dict) -> list[str]:
    """The lesson's four variables in ``graph``: ``w1`` alone on ps:0, the rest on ps:1."""
    import tfteach as tf

    if not isinstance(graph, tf.Graph):
        raise WrongKind
    found = {v.op.name: v for v in graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)}
    missing = [name for name, shape in MODEL_8.items()
               if name not in found or found[name].shape.as_list() != shape]
    if missing:
        return [tr("the graph has no variable {names} of the lesson's model",
                   names=join(missing))]
    problems = []
    for name in MODEL_8:
        spec = DeviceSpec.from_string(found[name].device)
        wanted = 0 if name == "w1" else 1
        if spec.job != "ps" or spec.task != wanted:
            problems.append(tr("{name} is on {device}, which does not balance the bytes",
                               name=name, device=found[name].device or "''"))
    return problems


# ---- 10.3: sync training that really trains -----------------------------------------------------

def check_sync_worker(build: Any, context: dict) -> list[str]:
    """Both workers' graphs from ``build(i)``: a SyncReplicasOptimizer waiting for both and
    its hook; then they train on the cluster until the global step reaches a number of steps
    the check picks, and every sync step must have had one gradient from each worker."""
    if not callable(build):
        raise WrongKind
    cluster = _cluster(context)
    try:
        built = [build(i) for i in range(2)]
    except Exception as error:             # the learner's code: any error is feedback
        return [tr("building a worker's graph raised {error}: {message}",
                   error=type(error).__name__, message=str(error)[:200])]
    return _sync_parts(built, 2, 2) or _trained_in_sync(built, cluster, _rng().randint(8, 14))


def _sync_parts(built: list, replicas: int, total: int) -> list[str]:
    opt, hooks = built[0][2], [b[3] for b in built]
    if type(opt).__name__ != "SyncReplicasOptimizer":
        return [tr("the optimizer is a {kind}: it does not wait for the workers' gradients",
                   kind=type(opt).__name__)]
    problems = []
    if getattr(opt, "_replicas_to_aggregate", None) != replicas or \
            getattr(opt, "_total_num_replicas", None) != total:
        problems.append(tr("the optimizer's replicas to aggregate or total replicas do not "
                           "match the workers and backups the exercise asks for"))
    if any(type(h).__name__ != "_SyncReplicasOptimizerHook" for h in hooks):
        problems.append(tr("the hook is not the one the optimizer's make_session_run_hook "
                           "makes"))
    elif [getattr(h, "_is_chief", None) for h in hooks] != [i == 0 for i in range(len(hooks))]:
        problems.append(tr("the hooks' chief flags are wrong: only worker 0 is the chief"))
    return problems


def _trained_in_sync(built: list, cluster: Any, steps: int) -> list[str]:
    import threading

    import tfteach as tf

    tf.Session.reset(cluster.target("worker", 0))     # fresh variables and queues on the ps
    done, failed = [0] * len(built), [None] * len(built)
    threads = [threading.Thread(target=_train_worker, daemon=True,
                                args=(built, i, cluster, steps, done, failed))
               for i in range(len(built))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    problems = [tr("worker {i}'s training failed with {error}: {message}", i=i,
                   error=type(error).__name__, message=str(error).split("\n")[0][:200])
                for i, error in enumerate(failed) if error is not None]
    if any(thread.is_alive() for thread in threads):
        problems.append(tr("training did not finish within two minutes"))
    if problems:
        return problems
    reached = _global_step(built[0][0], cluster)
    if reached < steps:
        return [tr("training stopped at global step {got}, before the {steps} steps asked",
                   got=reached, steps=steps)]
    if sum(done) < steps * len(built):
        return [tr("the workers computed {n} gradients: {steps} sync steps need one from each "
                   "worker at every step", n=sum(done), steps=steps)]
    return []


def _train_worker(built: list, i: int, cluster: Any, steps: int, done: list,
                  failed: list) -> None:
    import tfteach as tf

    graph, train_op, opt, hook = built[i]
    rng = np.random.default_rng()
    feed = {"x:0": rng.random((32, 64), dtype=np.float32), "y:0": rng.integers(0, 10, 32)}
    try:
        with graph.as_default():
            hooks = [hook, tf.train.StopAtStepHook(last_step=steps)]
            if i == 0:       # a worker waiting for a token at the end gets one and sees the end
                hooks.append(_RunAtEnd(opt.get_init_tokens_op(len(built))))
            config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{i}"])
            with tf.train.MonitoredTrainingSession(
                    master=cluster.target("worker", i), is_chief=i == 0, hooks=hooks,
                    config=config) as sess:
                while not sess.should_stop():
                    sess.run(train_op, feed)
                    done[i] += 1
    except Exception as error:             # the learner's graph: any error is feedback
        failed[i] = error


def _global_step(graph: Any, cluster: Any) -> int:
    import tfteach as tf

    with tf.Session(cluster.target("worker", 0), graph=graph,
                    config=tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"])) as s:
        return int(s.run(tf.train.get_global_step(graph)))


class _RunAtEnd(SessionRunHook):
    """A session hook that runs one op when its session ends (the chief's last tokens)."""

    def __init__(self, op: Any) -> None:
        self._op = op

    def end(self, session: Any) -> None:
        session.run(self._op)


# ---- functions that build ops: run them in graphs of the check's own ----------------------------

def _raised(error: Exception) -> list[str]:
    return [tr("your function raised {error}", error=type(error).__name__)]


def check_average_gradients(average: Any, context: dict) -> list[str]:
    """5.3: towers' gradients of random shapes and values; the mean per variable."""
    import tfteach as tf

    if not callable(average):
        raise WrongKind
    rng = np.random.default_rng()
    shapes = [tuple(rng.integers(1, 4, size=rng.integers(1, 3))) for _ in range(3)]
    grads = [[rng.normal(size=s).astype(np.float32) for s in shapes]
             for _ in range(int(rng.integers(2, 5)))]
    with tf.Graph().as_default():
        variables = [tf.Variable(np.zeros(s, np.float32), name=_name(_rng())) for s in shapes]
        towers = [[(tf.constant(g), v) for g, v in zip(tower, variables, strict=True)]
                  for tower in grads]
        try:
            pairs = list(average(towers))
            with tf.Session() as sess:
                got = sess.run([g for g, _ in pairs])
        except Exception as error:         # the learner's code: any error is feedback
            return _raised(error)
    if len(pairs) != len(variables) or [v for _, v in pairs] != variables:
        return [tr("the result is not one (gradient, variable) pair per variable, in order")]
    return _average_problems(got, [np.stack(each) for each in zip(*grads, strict=True)])


def _average_problems(got: list, stacked: list[np.ndarray]) -> list[str]:
    """``got`` against the towers' gradients of each variable, ``stacked`` along a new first
    axis: their mean over it, or what a common mistake makes instead."""
    def all_are(made: Callable[[np.ndarray], Any]) -> bool:
        return all(np.shape(g) == np.shape(made(s)) and np.allclose(g, made(s), atol=1e-5)
                   for g, s in zip(got, stacked, strict=True))

    if all_are(lambda s: s.mean(axis=0)):
        return []
    if all_are(lambda s: s.sum(axis=0)):
        return [tr("the gradients are the towers' gradients added up, not their average: "
                   "divide the sum by the number of towers")]
    if any(all_are(lambda s, axis=axis: s.mean(axis=axis)) for axis in (None, 1, -1)):
        return [tr("the mean is taken over the wrong axis: average over the towers, the axis "
                   "that stacking their gradients added, not within a gradient")]
    return [tr("a variable's gradient is not the mean of the towers' gradients")]


def check_worker_setter(setter: Any, context: dict) -> list[str]:
    """9.2: a variable and an op of random names under ``setter``."""
    import tfteach as tf

    if not callable(setter) or isinstance(setter, (str, DeviceSpec)):
        raise WrongKind
    rng = _rng()
    with tf.Graph().as_default(), tf.device(setter):
        v = tf.Variable(tf.zeros([2, 2]), name=_name(rng))
        y = tf.matmul(v, v, name=_name(rng))
    problems = []
    if DeviceSpec.from_string(v.device or "").job != "ps":
        problems.append(tr("variables do not go to the ps job"))
    if not _same_device(y.device, "/job:worker/task:1"):
        problems.append(tr("the other ops go to {device}, not to the worker the exercise asks "
                           "for", device=repr(y.device)))
    return problems


def check_counted_train_op(make_train_op: Any, context: dict) -> list[str]:
    """9.3: a random number of updates; the global step must count each, and each must
    update the model (a training op that only counts does not train)."""
    import tfteach as tf

    if not callable(make_train_op):
        raise WrongKind
    rng = _rng()
    steps = rng.randint(2, 6)
    with tf.Graph().as_default():
        w = tf.Variable(rng.uniform(1, 2), name=_name(rng))
        try:
            train_op = make_train_op(tf.square(w))
            if tf.train.get_global_step() is None:
                return [tr("the graph has no global step for your training op to count in "
                           "(a counter variable of your own is not the graph's global step)")]
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                start = sess.run(w)
                for _ in range(steps):
                    sess.run(train_op)
                counted, end = sess.run([tf.train.get_global_step(), w])
        except Exception as error:         # the learner's code: any error is feedback
            return _raised(error)
    return _counted_problems(counted == steps, end != start)


def _counted_problems(counted: bool, trained: bool) -> list[str]:
    problems = []
    if not counted:
        problems.append(tr("the global step does not count the updates your training op "
                           "makes"))
    if not trained:
        problems.append(tr("your training op does not update the model: the global step "
                           "counts the updates, it does not replace them"))
    return problems


def check_step_after(make: Any, context: dict) -> list[str]:
    """12.3: a random number of steps, fetching only what ``make`` returns."""
    import tfteach as tf

    if not callable(make):
        raise WrongKind
    rng = _rng()
    steps = rng.randint(3, 6)
    with tf.Graph().as_default():
        w = tf.Variable(rng.uniform(1, 2), name=_name(rng))
        global_step = tf.train.get_or_create_global_step()
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(tf.square(w),
                                                                  global_step=global_step)
        try:
            after = make(train_op, global_step)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                seen = [sess.run(after) for _ in range(steps)]
        except Exception as error:         # the learner's code: any error is feedback
            return _raised(error)
    return _step_after_problems(after is global_step, seen, steps)


def _step_after_problems(the_variable: bool, seen: list, steps: int) -> list[str]:
    if the_variable:
        return [tr("your function returns the global step variable itself: a control "
                   "dependency holds only for ops created inside its block, so create the "
                   "read there")]
    if any(value is None for value in seen):
        return [tr("fetching what your function returns gives None: it is an op that runs, "
                   "not a tensor holding the global step")]
    if [np.ndim(value) for value in seen] != [0] * steps:
        return [tr("your read does not show the global step after each step's update")]
    if [int(value) for value in seen] == [0] * steps:
        return [tr("fetching your read alone does not run the training op: the global step "
                   "never moves")]
    if [int(value) for value in seen] != list(range(1, steps + 1)):
        return [tr("your read does not show the global step after each step's update")]
    return []


def check_accuracy(make: Any, context: dict) -> list[str]:
    """12.4: random logits and labels, some of them wrong; the fraction right, on two such
    cases whose accuracies differ (so that no constant passes)."""
    import tfteach as tf

    if not callable(make):
        raise WrongKind
    rng = np.random.default_rng()
    first = _accuracy_case(rng)
    second = _accuracy_case(rng)
    while np.isclose(second[2], first[2], atol=1e-3):
        second = _accuracy_case(rng)
    for logits, labels, expected in (first, second):
        with tf.Graph().as_default(), tf.Session() as sess:
            try:
                value = sess.run(make(tf.constant(logits), tf.constant(labels, tf.int64)))
            except Exception as error:         # the learner's code: any error is feedback
                return _raised(error)
        if np.shape(value) != () or not np.isclose(float(value), expected, atol=1e-5):
            return [_accuracy_problem(value, expected, len(labels))]
    return []


def _accuracy_problem(value: Any, expected: float, rows: int) -> str:
    """What a wrong accuracy is, where a common mistake shows: a count, an integer mean."""
    if np.shape(value) == () and np.isclose(float(value), expected * rows, atol=1e-3):
        return tr("your op counts the rows whose class is right: the accuracy is their "
                  "fraction, an average")
    if np.shape(value) == () and np.asarray(value).dtype.kind in "iub":
        return tr("your op's value is an integer: a mean of integers is rounded down, so "
                  "turn the booleans into floats before averaging them")
    return tr("your op computes something else than the accuracy on the check's logits")


def _accuracy_case(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """Random logits, labels of which a random part is wrong, and the accuracy."""
    logits = rng.normal(size=(int(rng.integers(20, 60)), 10)).astype(np.float32)
    labels = logits.argmax(axis=1)
    wrong = rng.random(len(labels)) < rng.uniform(0.1, 0.6)
    labels[wrong] = (labels[wrong] + 1) % 10
    return logits, labels, float(1 - wrong.mean())


def check_backup_worker(build: Any, context: dict) -> list[str]:
    """10.4: three workers' graphs, sync with one backup (read, not trained)."""
    if not callable(build):
        raise WrongKind
    try:
        built = [build(i) for i in range(3)]
    except Exception as error:             # the learner's code: any error is feedback
        return [tr("building a worker's graph raised {error}: {message}",
                   error=type(error).__name__, message=str(error)[:200])]
    return _sync_parts(built, 2, 3)


def check_round_robin(make_setter: Any, context: dict) -> list[str]:
    """8.4: the learner's round-robin setter against replica_device_setter's, on hidden
    graphs (``exercise_checks_placement``)."""
    if not exercise_checks_placement.is_setter_maker(make_setter):
        raise WrongKind
    return exercise_checks_placement.round_robin_problems(make_setter)


def check_tower_loop(build: Any, context: dict) -> list[str]:
    """5.5: the learner's tower loop on hidden batches, models and GPU counts
    (``exercise_checks_towers``)."""
    if not exercise_checks_towers.is_tower_builder(build):
        raise WrongKind
    return exercise_checks_towers.tower_loop_problems(build)


def check_trainer(trainer: Any, context: dict) -> list[str]:
    """12.5: the learner's trainer.py run as 1 ps and 2 workers through a ps crash
    (``exercise_checks_capstone``)."""
    import os
    from pathlib import Path

    from tfteach.notebook import exercise_checks_capstone

    if not isinstance(trainer, os.PathLike):
        raise WrongKind
    return exercise_checks_capstone.trainer_problems(Path(trainer))


BUILD_CHECKS: dict[str, Callable[[Any, dict], list[str]]] = {
    "2.1": check_device_function,
    "5.3": check_average_gradients,
    "5.4": check_feed_in_proportion,
    "5.5": check_tower_loop,
    "8.2": check_greedy_setter,
    "8.3": check_hand_balance,
    "8.4": check_round_robin,
    "9.2": check_worker_setter,
    "9.3": check_counted_train_op,
    "10.3": check_sync_worker,
    "10.4": check_backup_worker,
    "11.1": check_filtered_step,
    "11.2": check_shared_token,
    "12.3": check_step_after,
    "12.4": check_accuracy,
    "12.5": check_trainer,
}


# ---- predict exercises: the answer, from a graph of the package's own ---------------------------

def requests_of_nested_scopes() -> dict[str, str]:
    """2.2: what ``p``, ``q`` and ``r`` ask for under the lesson's nested device blocks."""
    import tfteach as tf

    with tf.Graph().as_default() as graph:
        with tf.device("/job:worker"):
            with tf.device("/task:2"):
                tf.constant(1.0, name="p")
            with tf.device("/device:GPU:1"):
                with tf.device(None):
                    tf.constant(2.0, name="q")
                with tf.device("/cpu:0"):
                    tf.constant(3.0, name="r")
    return {op.name: op.device for op in graph.get_operations()}


def pending_counts_of_lesson_4() -> dict[str, int]:
    """4.1: the pending counts of lesson 4's five-op graph."""
    import tfteach as tf

    with tf.Graph().as_default() as graph:
        a = tf.constant(1.0, name="a")
        b = tf.constant(2.0, name="b")
        c = tf.add(a, b, name="c")
        d = tf.multiply(c, a, name="d")
        tf.add_n([c, d, b], name="e")
    return pending_counts(graph)


def _traced_transfers(build: Callable[[], Any]) -> list:
    """The transfers of one traced run of what ``build()`` returns, in a graph of its own."""
    import tfteach as tf

    with tf.Graph().as_default():
        fetch = build()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            meta = tf.RunMetadata()
            sess.run(fetch, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=meta)
    return list(meta.step_stats.transfers)


def transfers_of_lesson_4() -> int:
    """4.2: the copies of lesson 4's graph (x on the CPU read on both GPUs, sums back)."""
    import tfteach as tf

    def build() -> Any:
        with tf.device("/cpu:0"):
            x = tf.ones([256, 256], name="x")
        with tf.device("/gpu:0"):
            a = tf.reduce_sum(x * 2.0, name="a")
            b = tf.reduce_sum(x * 3.0, name="b")
        with tf.device("/gpu:1"):
            c = tf.reduce_sum(x * 4.0, name="c")
        with tf.device("/cpu:0"):
            return tf.add_n([a, b, c], name="total")
    return len(_traced_transfers(build))


def trainable_variables_of_towers() -> int:
    """5.1: the trainable variables of four towers sharing one three-layer model."""
    import tfteach as tf

    with tf.Graph().as_default():
        for i in range(4):
            with tf.variable_scope("model", reuse=i > 0):
                h = tf.zeros([1, 64])
                for layer, n_out in (("hidden1", 16), ("hidden2", 16), ("logits", 10)):
                    with tf.variable_scope(layer):
                        w = tf.get_variable("weights", [int(h.shape[1]), n_out])
                        h = tf.matmul(h, w) + tf.get_variable("biases", [n_out])
        return len(tf.trainable_variables())


def bytes_between_gpus_of_lesson_6() -> int:
    """6.2: the bytes from GPU:0 to GPU:1 when layer 1 (1024 units) runs on GPU:0 and the
    rest on GPU:1, for a batch of 256."""
    import tfteach as tf

    def build() -> Any:
        with tf.device("/gpu:0"):
            w1 = tf.Variable(tf.zeros([64, 1024]))
            h = tf.nn.relu(tf.matmul(tf.ones([256, 64]), w1))
        with tf.device("/gpu:1"):
            w2 = tf.Variable(tf.zeros([1024, 64]))
            return tf.matmul(h, w2)
    return sum(t.bytes for t in _traced_transfers(build)
               if "GPU" in t.src_device and "GPU" in t.dst_device)


PREDICTED: dict[str, Callable[[], Any]] = {
    "2.2": requests_of_nested_scopes,
    "4.1": pending_counts_of_lesson_4,
    "4.2": transfers_of_lesson_4,
    "5.1": trainable_variables_of_towers,
    "6.2": bytes_between_gpus_of_lesson_6,
}


# ---- builds whose value is read from them and compared with the exercise's answer --------------

def transfer_count(result: Any) -> int:
    """4.3: the copies between devices in a traced ``%%placement`` run."""
    timeline = getattr(result, "timeline", None)
    if timeline is None or isinstance(result, (dict, list)):
        raise WrongKind
    return len(timeline.data["transfers"])


def pending_counts(graph: Any) -> dict[str, int]:
    """4.4: each op's pending count in the learner's graph."""
    import tfteach as tf

    if not isinstance(graph, tf.Graph):
        raise WrongKind
    return {op.name: len(op.inputs) + len(op.control_inputs) for op in graph.get_operations()}


def cluster_jobs(spec: Any) -> dict[str, list[str]]:
    """7.1: the jobs and addresses of the learner's ClusterSpec."""
    import tfteach as tf

    if not isinstance(spec, tf.train.ClusterSpec):
        raise WrongKind
    return spec.as_dict()


DERIVED: dict[str, Callable[[Any], Any]] = {
    "4.3": transfer_count,
    "4.4": pending_counts,
    "7.1": cluster_jobs,
}
