"""8.4: a round-robin device function written by the learner, checked against TF's own.

The learner writes ``round_robin_setter(ps_tasks, worker_device)``, which returns a device
function (op -> device string): variables (ops of type ``VariableV2``) over the ps tasks in
turn, everything else on ``worker_device``. ``check_round_robin`` builds two hidden graphs
with the same random number of ps tasks, a random number of variables between other ops, a
random worker and random names, each under a setter made by a new call, and compares each
op's device with ``tf.train.replica_device_setter(ps_tasks=..., worker_device=...)`` on the
same graph. The second graph's variable count is not a multiple of the ps tasks, so a count
kept outside the setter (it carries over from one graph to the next) always shows as a
rotation in one of the two. Problems come in a fixed order and never name hidden values.
``exercise_checks.check_round_robin`` refuses what is not a function and calls
``round_robin_problems``; 2.1's check shares ``looks_for_type_variable``.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from tfteach.framework.device_spec import DeviceSpec
from tfteach.i18n import tr

Placement = dict[str, tuple[str, str]]         # op name -> (op type, canonical device)
_OWN = "_own"                                   # the type recorded for a variable's own ops


def _canonical(device: Any) -> str:
    try:
        spec = device if isinstance(device, DeviceSpec) else DeviceSpec.from_string(device or "")
    except (TypeError, ValueError):
        return repr(device)
    return spec.to_string()


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6))


def _hidden_model(device_fn: Any, variables: int, rng: random.Random) -> Placement:
    """A chain of layers (a variable, a MatMul or Add on it) under ``device_fn``; each op's
    type and requested device."""
    import tfteach as tf

    with tf.Graph().as_default() as graph, tf.device(device_fn):
        h = tf.constant(np.ones([1, 2], np.float32), name=_word(rng))
        for i in range(variables):
            if i % 2 == 0:
                h = tf.matmul(h, tf.Variable(np.eye(2, dtype=np.float32), name=_word(rng)))
            else:
                h = tf.add(h, tf.Variable(np.zeros([2], np.float32), name=_word(rng)))
        tf.reduce_sum(h, name=_word(rng))
    return {op.name: (_kind(op), _canonical(op.device)) for op in graph.get_operations()}


def _kind(op: Any) -> str:
    """The op's type, or ``_OWN`` for the ops a variable keeps with it (its Assign and read:
    they go where it goes, whatever the device function says)."""
    own = f"loc:@{op.name}".encode()
    return _OWN if [g for g in op.colocation_groups() if g != own] else op.type


def _case(setter: Any, ps_tasks: int, variables: int, worker: str,
          seed: int) -> tuple[Placement, Placement]:
    """The learner's placement and replica_device_setter's on the same hidden graph."""
    import tfteach as tf

    reference = tf.train.replica_device_setter(ps_tasks=ps_tasks, worker_device=worker)
    return (_hidden_model(setter, variables, random.Random(seed)),
            _hidden_model(reference, variables, random.Random(seed)))


def is_setter_maker(built: Any) -> bool:
    """Whether ``built`` is the kind of thing 8.4 checks: a function (not a class or spec)."""
    return callable(built) and not isinstance(built, (type, DeviceSpec))


def round_robin_problems(make_setter: Callable[[int, str], Any]) -> list[str]:
    """``make_setter(ps_tasks, worker_device)`` on two hidden graphs (see the module)."""
    rng = random.Random()
    ps_tasks = rng.randint(2, 5)
    worker = f"/job:worker/task:{rng.randint(0, 3)}"
    counts = [rng.randint(ps_tasks + 1, 3 * ps_tasks) for _ in range(2)]
    while counts[0] % ps_tasks == 0:
        counts[0] += 1
    problems: list[str] = []
    for variables in counts:
        try:
            setter = make_setter(ps_tasks, worker)
            if not callable(setter):
                return [tr("round_robin_setter(ps_tasks, worker_device) returns a {kind}, not "
                           "a device function", kind=type(setter).__name__)]
            got, wanted = _case(setter, ps_tasks, variables, worker, rng.randrange(10**9))
        except Exception as error:         # the learner's code: any error is feedback
            return [tr("your function raised {error}: {message}", error=type(error).__name__,
                       message=str(error).split("\n")[0][:200])]
        if not any(DeviceSpec.from_string(device).job == "ps"
                   for kind, device in got.values() if kind == "VariableV2"):
            return [_no_ps_problem(setter)]
        problems += [p for p in _placement_problems(got, wanted, ps_tasks) if p not in problems]
    return problems


def looks_for_type_variable(device_fn: Any) -> bool:
    """Whether ``device_fn``'s code compares with the type ``'Variable'``, which no op has,
    and not with ``'VariableV2'`` (the classic mistake of TF 1.x device functions)."""
    code = getattr(device_fn, "__code__", None)
    if code is None:
        return False
    names: set = set()
    for const in code.co_consts:          # op.type == 'Variable', or in ('Variable', ...)
        names.update(const if isinstance(const, (tuple, frozenset)) else (const,))
    return "Variable" in names and "VariableV2" not in names


def _no_ps_problem(setter: Any) -> str:
    """No variable on a ps task: the classic test of the type ``'Variable'``, or none."""
    if looks_for_type_variable(setter):
        return tr("no variable went to a ps task: your function looks for ops of type "
                  "'Variable', and no op has that type; TF 1.x's variables are ops of type "
                  "'VariableV2'")
    return tr("no variable went to a ps task: your device function returns a ps task's "
              "device for no op (variables are the ops of type 'VariableV2')")


def _placement_problems(got: Placement, wanted: Placement, ps_tasks: int) -> list[str]:
    variables = [name for name, (kind, _) in wanted.items() if kind == "VariableV2"]
    others = [name for name, (kind, _) in wanted.items() if kind not in ("VariableV2", _OWN)]
    tasks = [DeviceSpec.from_string(got[name][1]) for name in variables]
    misplaced = [name for name in others if got[name][1] != wanted[name][1]]
    problems = [tr("ops of type {type} get {device}, not the worker_device the setter was "
                   "given", type=got[name][0], device=repr(got[name][1]))
                for name in misplaced[:1]]
    if any(got[name][1] != wanted[name][1] for name in variables):
        problems.append(_order_problem([s.task for s in tasks],
                                       [DeviceSpec.from_string(wanted[n][1]).task
                                        for n in variables], ps_tasks))
    return problems


def _order_problem(got: list, wanted: list[int], ps_tasks: int) -> str:
    """Which mistake the variables' tasks show: a count carried over from an earlier setter
    (the right turn, shifted), or not in turn at all."""
    if all(isinstance(t, int) for t in got):
        shifts = {(g - w) % ps_tasks for g, w in zip(got, wanted, strict=True)}
        if len(shifts) == 1:
            return tr("the variables go round the ps tasks but do not start at task 0: the "
                      "count carried over from an earlier setter (a counter kept outside the "
                      "function). Keep the counter inside round_robin_setter, so that each "
                      "setter it returns starts again at task 0")
    return tr("the variables do not go to the ps tasks in turn (task 0, 1, ... and round "
              "again), in the order they are created")
