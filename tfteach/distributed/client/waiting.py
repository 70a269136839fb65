"""Waiting for a cluster's tasks to come up (GetStatus probes).

``wait_for_tasks(client, [(task_name, address)], operation_timeout_in_ms)`` is the master's
CreateSession wait: it logs ``CreateSession still waiting for response from worker: ...``
every ``LOG_PERIOD_S`` and raises UnavailableError naming the tasks that never answered.
``wait_for_task`` waits silently for one task; ``probe_tasks`` asks every task once (with a
shared-memory probe each: ``shm_probe``).
"""
from __future__ import annotations

import time
from typing import Any, Iterable, Mapping

import grpc

from tfteach import errors
from tfteach.distributed.client.client import ClusterClient, strip_scheme
from tfteach.distributed.client.stubs import status_dict
from tfteach.distributed.protocol import tflog
from tfteach.distributed.protocol.status import error_from_rpc
from tfteach.distributed.transport.shm_probe import Probe
from tfteach.i18n import hint_line, tr

LOG_PERIOD_S = 10.0
DEFAULT_OPERATION_TIMEOUT_MS = 60000
_PROBE_TIMEOUT_S = 1.0


def probe_tasks(client: ClusterClient, targets: Mapping[str, str],
                timeout: float = _PROBE_TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """GetStatus on every ``{task_name: address}`` in parallel, each waiting at most
    ``timeout`` s for its task to come up; return the answers of those that answered.
    A task that answers with an error other than "not there yet" raises that error."""
    calls, probes = {}, {name: Probe() for name in targets}
    for name, address in targets.items():
        calls[name] = client.route(address).future("GetStatus", probes[name].request(),
                                                   timeout, wait_for_ready=True)
    answers = {}
    for name, call in calls.items():
        try:
            response = call.result()
            proven = client.route(targets[name]).learn_status(response, probes[name])
            answers[name] = status_dict(response, proven)
        except grpc.RpcError as err:
            if err.code() not in (grpc.StatusCode.UNAVAILABLE,
                                  grpc.StatusCode.DEADLINE_EXCEEDED):
                raise error_from_rpc(err, name, targets[name]) from None
        finally:
            probes[name].close()
    return answers


def wait_for_task(address: str, timeout: float = 60.0, client: ClusterClient | None = None,
                  task_name: str | None = None) -> dict[str, Any]:
    """Wait until the task at ``address`` answers GetStatus; return its status.
    Raises UnavailableError naming ``task_name`` (or the address) after ``timeout`` s."""
    name = task_name or strip_scheme(address)
    answers = wait_for_tasks(client or ClusterClient.from_env(), [(name, address)],
                             operation_timeout_in_ms=max(1, int(timeout * 1000)),
                             log_period_s=None)
    return answers[name]


def wait_for_tasks(client: ClusterClient, targets: Iterable[tuple[str, str]],
                   operation_timeout_in_ms: int | None = DEFAULT_OPERATION_TIMEOUT_MS,
                   log_period_s: float | None = LOG_PERIOD_S) -> dict[str, dict[str, Any]]:
    """The master's CreateSession wait for ``[(task_name, address)]`` (see module doc).

    Returns ``{task_name: status}``. ``operation_timeout_in_ms`` of 0 or None means the
    default (60000 ms); ``log_period_s=None`` waits silently.
    """
    pending = dict(targets)
    timeout_s = (operation_timeout_in_ms or DEFAULT_OPERATION_TIMEOUT_MS) / 1000.0
    start = time.monotonic()
    next_log = start + (log_period_s or float("inf"))
    answers: dict[str, dict[str, Any]] = {}
    while pending:
        remaining = start + timeout_s - time.monotonic()
        if remaining <= 0:
            raise _never_answered(pending, operation_timeout_in_ms or DEFAULT_OPERATION_TIMEOUT_MS)
        probe_timeout = min(_PROBE_TIMEOUT_S, remaining, max(next_log - time.monotonic(), 0.05))
        answers.update(probe_tasks(client, pending, probe_timeout))
        for name in answers:
            pending.pop(name, None)
        if pending and log_period_s and time.monotonic() >= next_log:
            _log_waiting(pending)
            next_log += log_period_s
    return answers


def _log_waiting(pending: Mapping[str, str]) -> None:
    for name, address in pending.items():
        tflog.info(f"CreateSession still waiting for response from worker: {name}")
        tflog.info(hint_line(tr("is that task started? is the address right? "
                                "(expected at {address})", address=address)))


def _never_answered(pending: Mapping[str, str], timeout_ms: int) -> errors.OpError:
    tasks = ", ".join(f"{name} ({address})" for name, address in pending.items())
    return errors.UnavailableError(
        f"CreateSession timed out after {timeout_ms} ms: no response from worker: {tasks}",
        hint=tr("Is that task started? Is the address right? Start it (tfteach-server "
                "--job J --task T) or fix the ClusterSpec; raise "
                "ConfigProto(operation_timeout_in_ms=...) to wait longer."))
