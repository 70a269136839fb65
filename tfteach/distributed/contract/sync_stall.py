"""Why a step timed out on a task that holds ``SyncReplicasOptimizer``'s accumulators.

A worker's sync step waits for a token from ``sync_token_q``; the chief's sync op hands out
new tokens only once every accumulator has ``replicas_to_aggregate`` fresh gradients. When
the wait times out on this task, ``explain_timeout`` keeps the error's class and message and
adds a hint from the accumulators in the task's containers: the workers (tasks of the
senders' jobs) whose gradients the chief's take_grad still lacks, or, when the gradients are
there and no take_grad waits, that the chief's sync op is not running. Each accumulator records the task of every
gradient it holds (``caller``: the master of the step that applied it).
"""
from __future__ import annotations

import re
from typing import Any

from tfteach import errors
from tfteach.i18n import tr
from tfteach.ops.accumulator_ops import AccumulatorResource

_TASK = re.compile(r"^/job:([^/]+)/replica:\d+/task:(\d+)$")


def explain_timeout(error: errors.OpError, mgr: Any, cluster: Any) -> errors.OpError:
    """``error`` with a hint naming what the sync step waits for, if the task holds
    accumulators (``mgr``: its containers; ``cluster``: its ClusterSpec); else ``error``."""
    progress = [dict(r.progress(), name=r.name) for r in list(mgr.table("").values())
                if isinstance(r, AccumulatorResource)]
    note = _note(progress, cluster)
    if not note:
        return error
    return errors.DeadlineExceededError(error.message, op=error.op, hint=tr(
        "{note}. A backup worker (SyncReplicasOptimizer(..., total_num_replicas > "
        "replicas_to_aggregate)) lets each step go on with the first gradients to come; a "
        "shorter timeout (tf.RunOptions(timeout_in_ms=...) or "
        "ConfigProto(operation_timeout_in_ms=...)) reports a missing worker sooner. Restart "
        "a dead task (LocalCluster.restart or tfteach-server).", note=note))


def _note(progress: list[dict[str, Any]], cluster: Any) -> str:
    lacking = [p for p in progress if p["needs"] > p["holds"]]
    if lacking:
        p = lacking[0]
        senders = sorted(set(p["senders"]) - {""})
        missing = missing_tasks(senders, cluster)
        return (tr("accumulator '{name}' has {holds} of {needs} gradients for step {step}",
                   name=p["name"], holds=p["holds"], needs=p["needs"], step=p["step"])
                + (tr(" (from {tasks})", tasks=", ".join(senders)) if senders else "")
                + (tr("; no gradient came from {tasks}", tasks=", ".join(missing))
                   if missing else ""))
    idle = [p for p in progress if not p["waits"]]
    if idle:
        p, taker = idle[0], idle[0]["taker"]
        return (tr("no take_grad waits on accumulator '{name}' ({holds} gradients held for "
                   "step {step}): the chief's sync op, which hands out the tokens, is not "
                   "running", name=p["name"], holds=p["holds"], step=p["step"])
                + (tr(" (it last ran on {task})", task=taker) if taker else ""))
    return ""


def missing_tasks(senders: list[str], cluster: Any) -> list[str]:
    """The tasks of the senders' jobs in ``cluster`` that are not among ``senders``."""
    jobs = {m.group(1) for m in map(_TASK.match, senders) if m}
    return [name for job in sorted(jobs) for name in
            (f"/job:{job}/replica:0/task:{i}" for i in cluster.task_indices(job))
            if name not in senders]
