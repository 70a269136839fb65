"""What a build exercise's check runs, and what a predict exercise's answer is built from.

A build exercise (``"kind": "build"`` in ``exercises.json``) is checked on what the learner
built (a function, a graph, a config, a server), never on numbers: ``BUILD_CHECKS[name]``
runs it on hidden, randomised inputs and returns the problems it found, each naming the part
that is wrong and the kind of mistake, and never the expected value. ``PREDICTED[name]``
builds, in a graph of the package's own, the answer a predict exercise compares with.

A checker is ``check(built, context) -> list[str]``; ``context`` holds what the lesson passes
beside (``cluster=``). It raises ``WrongKind`` when ``built`` is not the kind of thing the
exercise asks for.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from tfteach.framework.device_spec import DeviceSpec
from tfteach.i18n import tr


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

def _split_case(rng: random.Random, n: int, speeds: list[float]) -> tuple:
    ids = np.array(rng.sample(range(10**6), n))
    x = np.stack([ids, ids * 2 + 1], axis=1).astype(np.float32)
    y = ids * 7 + 3                                    # a label that names its row
    return x, y, speeds


def _split_cases(rng: random.Random) -> list[tuple]:
    cases = [_split_case(rng, rng.randint(97, 701), [1.0, rng.choice([0.3, 0.45, 0.7])])]
    for _ in range(2):
        k = rng.randint(2, 4)
        speeds = [rng.choice([0.25, 0.5, 1.0, 1.5, 2.0]) for _ in range(k)]
        cases.append(_split_case(rng, rng.randint(50, 613), speeds))
    return cases


def check_feed_in_proportion(build: Any, context: dict) -> list[str]:
    if not callable(build):
        raise WrongKind
    for x, y, speeds in _split_cases(_rng()):
        xs = [f"x_{i}" for i in range(len(speeds))]
        ys = [f"y_{i}" for i in range(len(speeds))]
        try:
            slices = build(xs, ys, x, y, speeds)
        except Exception as error:         # the learner's code: any error is feedback
            return [tr("the function raised {error}: {message}", error=type(error).__name__,
                       message=str(error)[:200])]
        problems = _split_problems(slices, xs, ys, x, y, speeds)
        if problems:
            return problems
    return []


def _split_problems(slices: Any, xs: list, ys: list, x: np.ndarray, y: np.ndarray,
                    speeds: list[float]) -> list[str]:
    if not isinstance(slices, dict):
        return [tr("the function returns {kind}, not a dict from the names in xs and ys to "
                   "their slices", kind=type(slices).__name__)]
    missing = [name for name in xs + ys if name not in slices]
    if missing:
        return [tr("there is no slice for {names}", names=", ".join(missing))]
    rows = [np.asarray(slices[name]) for name in xs]
    labels = [np.asarray(slices[name]) for name in ys]
    problems = _cover_problems(rows, x)
    problems += [tr("tower {i}'s labels do not travel with its rows: they are not the labels "
                    "of the rows it got", i=i)
                 for i, (r, lab) in enumerate(zip(rows, labels, strict=True))
                 if len(r) != len(lab) or not np.array_equal(r[:, 0] * 7 + 3, lab)]
    if not problems:
        total, n = sum(speeds), len(x)
        problems += [tr("tower {i}'s share is off by more than one row: {rows} rows for "
                        "speed {speed} of {total}", i=i, rows=len(r), speed=s, total=total)
                     for i, (r, s) in enumerate(zip(rows, speeds, strict=True))
                     if abs(len(r) - n * s / total) > 1]
    return problems


def _cover_problems(rows: list[np.ndarray], x: np.ndarray) -> list[str]:
    if any(r.ndim != 2 or r.shape[1:] != x.shape[1:] for r in rows):
        return [tr("a slice is not a block of whole rows of x_batch")]
    seen = np.concatenate([r[:, 0] for r in rows]) if rows else np.zeros(0)
    if len(np.unique(seen)) < len(seen):
        return [tr("the slices overlap: some rows go to two towers")]
    if len(seen) != len(x) or not np.isin(x[:, 0], seen).all():
        return [tr("the slices do not cover the batch: {n} of its {total} rows are left out "
                   "(the remainder?)", n=len(x) - int(np.isin(x[:, 0], seen).sum()),
                   total=len(x))]
    return []


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
        return [tr("the step ran but computed {got}, not the value of the hidden test",
                   got=got)]
    return []


BUILD_CHECKS: dict[str, Callable[[Any, dict], list[str]]] = {
    "5.4": check_feed_in_proportion,
    "11.1": check_filtered_step,
    "11.2": check_shared_token,
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


PREDICTED: dict[str, Callable[[], Any]] = {
    "2.2": requests_of_nested_scopes,
}
