"""5.5: the tower loop of data parallelism, written by the learner, run on hidden batches.

The learner writes ``tower_train_op(model_fn, opt, x_batch, y_batch, num_gpus)``: one tower
per GPU (``tf.device`` and ``tf.name_scope('tower_i')``), each building ``model_fn`` on its
slice of the batch with the variables shared (``reuse``), its gradients from
``opt.compute_gradients``; then the gradients averaged on the CPU and applied once.
``tower_loop_problems`` runs it twice, with two different numbers of GPUs out of 2 to 4, a
batch of a random size that every such number divides (so that a loop written for one number
of GPUs runs, and shows as such, with another), a model function of its own (a linear model with a
mean squared error, its variables made on the CPU with ``get_variable``, which records the
slice and the ops of each call) and a gradient-descent optimizer with a random learning rate.
One traced step then shows where each tower ran, what each tower saw, and how often each
variable was updated; the update must be the one a single device makes on the whole batch,
worked out with NumPy. Problems come in a fixed order and never name hidden values.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfteach.framework.device_spec import DeviceSpec
from tfteach.i18n import tr
from tfteach.notebook.exercise_checks_placement import is_setter_maker
from tfteach.notebook.placement_cell import virtual_gpus

MOST_GPUS = 4


@dataclass
class _Case:
    """One hidden run: the batch, the model's first values and what the model function saw."""

    num_gpus: int
    x: np.ndarray                  # [n, d]; column 0 names its row (distinct values)
    y: np.ndarray                  # [n, 1]
    w0: np.ndarray                 # [d, 1]
    b0: float
    rate: float
    calls: list = field(default_factory=list)     # (x slice, y slice, ops) per model_fn call


def _case(rng: random.Random, num_gpus: int) -> _Case:
    values = np.random.default_rng(rng.randrange(2**32))
    n, d = 12 * rng.randint(1, 3), rng.randint(2, 4)     # every GPU count divides n
    ids = np.array(rng.sample(range(-500, 500), n)) / 500.0
    x = np.column_stack([ids, values.normal(size=(n, d - 1))]).astype(np.float32)
    return _Case(num_gpus, x, values.normal(size=(n, 1)).astype(np.float32),
                 values.normal(size=(d, 1)).astype(np.float32), float(values.normal()),
                 round(rng.uniform(0.05, 0.5), 3))


def _model_fn(case: _Case) -> Callable[[Any, Any], Any]:
    """The check's model function: ``x @ weights + bias``, half the mean squared error."""
    import tfteach as tf

    def model_fn(x: Any, y: Any) -> Any:
        with tf.device("/cpu:0"):
            w = tf.get_variable("weights", [case.w0.shape[0], 1],
                                initializer=tf.constant_initializer(case.w0))
            b = tf.get_variable("bias", [1], initializer=tf.constant_initializer(case.b0))
        graph = tf.get_default_graph()
        first = len(graph.get_operations())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y)) / 2.0
        case.calls.append((x, y, graph.get_operations()[first:]))
        return loss
    return model_fn


def is_tower_builder(built: Any) -> bool:
    """Whether ``built`` is the kind of thing 5.5 checks: a function."""
    return is_setter_maker(built)


def tower_loop_problems(build: Callable[..., Any]) -> list[str]:
    """``build`` on two hidden cases (see the module)."""
    rng, problems = random.Random(), []
    for num_gpus in rng.sample(range(2, MOST_GPUS + 1), 2):
        found = _one_case(build, _case(rng, num_gpus))
        problems += [p for p in found if p not in problems]
        if problems:
            return problems
    return problems


def _one_case(build: Callable[..., Any], case: _Case) -> list[str]:
    import tfteach as tf

    with virtual_gpus(MOST_GPUS), tf.Graph().as_default() as graph:
        x = tf.placeholder(tf.float32, case.x.shape, name="x_batch")
        y = tf.placeholder(tf.float32, case.y.shape, name="y_batch")
        opt = tf.train.GradientDescentOptimizer(case.rate)
        try:
            train_op = build(_model_fn(case), opt, x, y, case.num_gpus)
        except Exception as error:         # the learner's code: any error is feedback
            return _failed_build(error, graph)
        problems = _built_problems(case, train_op, graph)
        if problems:
            return problems
        try:
            return _run_problems(case, train_op, graph, {x: case.x, y: case.y})
        except Exception as error:         # the learner's graph: any error is feedback
            return _raised(error)


def _raised(error: Exception) -> list[str]:
    return [tr("your function raised {error}: {message}", error=type(error).__name__,
               message=str(error).split("\n")[0][:200])]


def _failed_build(error: Exception, graph: Any) -> list[str]:
    """Why building failed: a second tower making variables again (no reuse), a tower reusing
    variables of a scope nobody made them in, towers with variables of their own (their gradients are None for the other towers' variables), or
    the learner's own error."""
    import tfteach as tf

    if isinstance(error, ValueError) and "already exists" in str(error):
        return [_reuse_problem()]
    if isinstance(error, ValueError) and "does not exist" in str(error):
        return [tr("a tower looked for shared variables that no tower made: every tower must "
                   "open the same variable scope, the first without reuse (it makes the "
                   "variables) and the others with it")]
    if len(graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)) > 2:
        return [_own_variables_problem()]
    return _raised(error)


def _own_variables_problem() -> str:
    return tr("each tower made its own variables: open the same variable scope in every "
              "tower, with reuse for every tower after the first, so that the towers share "
              "one set")


def _reuse_problem() -> str:
    return tr("the second tower could not build the model: its variables already exist. Open "
              "the variable scope with reuse for every tower after the first, so that the "
              "towers share one set of variables")


def _built_problems(case: _Case, train_op: Any, graph: Any) -> list[str]:
    """What the graph shows before it runs: the result, the calls, the variables."""
    import tfteach as tf

    if train_op is None:
        return [tr("tower_train_op returns None, not the training op")]
    if len(case.calls) != case.num_gpus:
        return [tr("the model function was not called once per GPU: each tower builds the "
                   "model once, on its own slice of the batch")]
    variables = graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
    if len(variables) > 2:
        return [_own_variables_problem()]
    return []


def _ran_on(meta: Any) -> dict[str, DeviceSpec]:
    """Where each op of a traced step ran."""
    return {stat.node_name: DeviceSpec.from_string(dev.device)
            for dev in meta.step_stats.dev_stats for stat in dev.node_stats}


def _run_problems(case: _Case, train_op: Any, graph: Any, feed: dict) -> list[str]:
    import tfteach as tf

    variables = graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
    with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        slices = sess.run([(x, y) for x, y, _ in case.calls], feed)
        meta = tf.RunMetadata()
        sess.run(train_op, feed, run_metadata=meta,
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
        after = sess.run(variables)
    ran = _ran_on(meta)
    problems = (_variable_problems(variables, ran) + _slice_problems(case, slices)
                + _tower_problems(case, ran))
    return problems + _update_problems(case, graph, ran, after, problems)


def _variable_problems(variables: list, ran: dict[str, DeviceSpec]) -> list[str]:
    for v in variables:
        spec = ran.get(v.op.name)
        if spec is not None and spec.device_type != "CPU":
            return [tr("a variable was placed on {device}, not on the CPU",
                       device=_short(spec))]
    return []


def cover_problems(rows: list[np.ndarray], x: np.ndarray) -> list[str]:
    """Whether the towers' slices ``rows`` are whole rows of the batch ``x`` (its column 0 names
    each row), none in two towers, none left out (5.4 and 5.5)."""
    if any(r.ndim != 2 or r.shape[1:] != x.shape[1:] for r in rows):
        return [tr("a slice is not a block of whole rows of x_batch")]
    seen = np.concatenate([r[:, 0] for r in rows]) if rows else np.zeros(0)
    if len(np.unique(seen)) < len(seen):
        return [tr("the slices overlap: some rows go to two towers")]
    if len(seen) != len(x) or not np.isin(x[:, 0], seen).all():
        return [tr("the slices do not cover the batch: rows are left out (the remainder?)")]
    return []


def _short(spec: DeviceSpec) -> str:
    return DeviceSpec(device_type=spec.device_type, device_index=spec.device_index).to_string()


def _slice_problems(case: _Case, slices: list) -> list[str]:
    rows = [np.asarray(x, np.float32) for x, _ in slices]
    problems = cover_problems(rows, case.x)
    label_of = dict(zip(case.x[:, 0].tolist(), case.y[:, 0].tolist(), strict=True))
    for r, labels in zip(rows, slices, strict=True):
        labels = np.asarray(labels[1]).reshape(-1)
        if r.ndim == 2 and len(r) and (len(labels) != len(r) or not np.allclose(
                [label_of.get(v, np.nan) for v in r[:, 0].tolist()], labels)):
            problems.append(tr("the labels do not travel with their rows: a tower gets labels "
                               "of rows it did not get"))
            break
    return problems


def _tower_problems(case: _Case, ran: dict[str, DeviceSpec]) -> list[str]:
    """Each tower's model ops: on its own GPU, in its own name scope."""
    places = [{(s.device_type, s.device_index) for op in ops if (s := ran.get(op.name))}
              for _, _, ops in case.calls]
    problems = []
    if len(set().union(*places)) == 1:
        problems.append(tr("all the towers ran on the same device: put each tower under "
                           "tf.device on a GPU of its own"))
    elif any(p != {("GPU", i)} for i, p in enumerate(places)):
        problems.append(tr("a tower's model ran on another device than its own GPU: tower i "
                           "belongs on /gpu:i"))
    if any(not op.name.startswith(f"tower_{i}/")
           for i, (_, _, ops) in enumerate(case.calls) for op in ops):
        problems.append(tr("the towers' ops are not named by tower: build tower i inside "
                           "tf.name_scope('tower_%d' % i)"))
    return problems


def _update_problems(case: _Case, graph: Any, ran: dict[str, DeviceSpec], after: list,
                     found: list[str]) -> list[str]:
    """The step's updates: one per variable, averaged on the CPU, equal to one device's
    update on the whole batch (not said where ``found`` already explains a wrong update)."""
    applies = [graph.get_operation_by_name(name) for name in ran
               if graph.get_operation_by_name(name).type.startswith("Apply")]
    if len(applies) > len(after):
        return [tr("each variable was updated more than once in a step: apply the averaged "
                   "gradients once, after the loop, not once per tower")]
    averaged_on = {ran.get(op.inputs[2].op.name) for op in applies if len(op.inputs) > 2}
    problems = [tr("the averaged gradients were computed on {device}, not on the CPU: average "
                   "and apply them under tf.device('/cpu:0')", device=_short(spec))
                for spec in averaged_on if spec is not None and spec.device_type != "CPU"][:1]
    start = np.append(case.w0[:, 0], case.b0)
    got, wanted = _step(after) - start, _whole_batch_step(case) - start
    if np.allclose(got, case.num_gpus * wanted, atol=1e-4):
        problems.append(tr("the update is the towers' gradients added up, not their "
                           "average: divide the sum by the number of towers"))
    elif not found and not np.allclose(got, wanted, atol=1e-4):
        problems.append(tr("one step does not make the update of one device on the whole "
                           "batch: the towers' gradients are not averaged"))
    return problems


def _step(after: list) -> np.ndarray:
    """The variables after the step, weights then bias, as one vector."""
    weights = next(v for v in after if np.ndim(v) == 2)
    bias = next(v for v in after if np.ndim(v) == 1)
    return np.append(np.asarray(weights)[:, 0], bias)


def _whole_batch_step(case: _Case) -> np.ndarray:
    """Gradient descent on the whole batch on one device, with NumPy."""
    x, y = case.x.astype(np.float64), case.y.astype(np.float64)
    error = x @ case.w0 + case.b0 - y
    grad = np.append((x.T @ error)[:, 0], error.sum()) / len(x)
    return np.append(case.w0[:, 0], case.b0) - case.rate * grad
