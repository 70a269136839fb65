"""One place that maps ``tfteach.errors.OpError`` <-> gRPC status, in both directions.

Server side: ``abort(context, err)`` ends an RPC with the error's code and message, and puts
the error's class name and hint (and any ``rpc_metadata`` the error carries) in trailing
metadata; ``rpc_method``/``rpc_stream`` wrap a
servicer method so that every OpError (and any unexpected exception) becomes such a status.
Client side: ``error_from_rpc(rpc_error, task, address)`` rebuilds the same OpError class with
its message and hint (and the call's trailing metadata as ``rpc_trailing``); transport
failures (no tfteach metadata) get a message naming the task and a hint. TF's error codes
equal gRPC's status codes (both are google.rpc.Code).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, NoReturn

import grpc

from tfteach import errors
from tfteach.distributed.protocol import tflog
from tfteach.distributed.protocol.limits import MAX_MESSAGE_ENV
from tfteach.i18n import tr

CLASS_KEY = "tfteach-error"
HINT_KEY = "tfteach-hint-bin"     # -bin: a hint may hold any unicode text

_STATUS_BY_CODE = {status.value[0]: status for status in grpc.StatusCode}
# A failed call with no tfteach error class: the peer's answer was not ours (bytes that are
# not HTTP/2, a response that does not parse, a stream reset), not an error of a task.
_GARBAGE_CODES = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)


def status_code(error_code: int) -> grpc.StatusCode:
    """The gRPC status code for a TF error code."""
    return _STATUS_BY_CODE.get(error_code, grpc.StatusCode.UNKNOWN)


def error_code(status: grpc.StatusCode) -> int:
    """The TF error code for a gRPC status code."""
    return status.value[0]


def abort(context: grpc.ServicerContext, err: errors.OpError) -> NoReturn:
    """End the current RPC with ``err`` (class name and hint travel as trailing metadata)."""
    metadata = [(CLASS_KEY, type(err).__name__), *getattr(err, "rpc_metadata", ())]
    if err.hint:
        metadata.append((HINT_KEY, err.hint.encode("utf-8")))
    context.set_trailing_metadata(tuple(metadata))
    context.abort(status_code(err.error_code), err.message)
    raise AssertionError("unreachable: context.abort raises")  # pragma: no cover


def internal_error(exc: BaseException, where: str) -> errors.OpError:
    """An InternalError for an unexpected exception raised while serving ``where``."""
    return errors.InternalError(
        f"{where} failed with {type(exc).__name__}: {exc}",
        hint=tr("This is a bug in tfteach's engine, not in your program; the task's log "
                "has the traceback."))


def _as_op_error(exc: Exception, where: str) -> errors.OpError:
    if isinstance(exc, errors.OpError):
        return exc
    tflog.logger.exception("Unexpected error in %s", where)
    return internal_error(exc, where)


def rpc_method(method: Callable) -> Callable:
    """Wrap a unary servicer method: exceptions become a gRPC status via ``abort``."""
    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as exc:  # noqa: BLE001 - every failure must become a status
            error = _as_op_error(exc, method.__name__)
        abort(context, error)
    return wrapper


def rpc_stream(method: Callable) -> Callable:
    """Wrap a server-streaming servicer method (a generator) like ``rpc_method``."""
    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from method(self, request, context)
            return
        except Exception as exc:  # noqa: BLE001
            error = _as_op_error(exc, method.__name__)
        abort(context, error)
    return wrapper


def message_size_hint() -> str:
    """The hint of a message larger than a task reads."""
    return tr("A task reads messages of at most {variable} bytes (default 1 GiB): set it "
              "larger in every task's environment (or pass Server(max_message_bytes=...)), "
              "or feed large tensors in pieces.", variable=MAX_MESSAGE_ENV)


def malformed_hint() -> str:
    """The hint of a request that does not parse."""
    return tr("tfteach's clients send well-formed requests; a client of your own must "
              "serialize the messages of tfteach_cluster.proto.")


def error_from_rpc(err: grpc.RpcError, task: str | None = None,
                   address: str | None = None) -> errors.OpError:
    """The OpError that a failed call raised on the server, or one naming the task."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = (err.details() if hasattr(err, "details") else None) or str(code)
    metadata = dict(err.trailing_metadata() or ()) if hasattr(err, "trailing_metadata") else {}
    class_name = metadata.get(CLASS_KEY)
    if class_name:
        hint = metadata.get(HINT_KEY)
        hint = hint.decode("utf-8", "replace") if isinstance(hint, bytes) else hint
        error = errors.exception_type_from_name(class_name)(details, hint=hint)
        error.rpc_trailing = metadata   # read, never sent on (``abort``): a marker such
        return error                    # as ``limits.BUSY_KEY`` is for this call only
    return _transport_error(code, details, task, address)


def _transport_error(code: grpc.StatusCode, details: str, task: str | None,
                     address: str | None) -> errors.OpError:
    where = " ".join(part for part in (task, f"({address})" if address else None) if part)
    where = where or "the remote task"
    cls = errors.exception_type_from_error_code(error_code(code))
    if code == grpc.StatusCode.UNAVAILABLE:
        return cls(f"Task {where} is unavailable: {details}",
                   hint=tr("Is that task started? Is the address right? A task that died "
                           "must be restarted (LocalCluster.restart(job, task) or "
                           "tfteach-server)."))
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return cls(f"Task {where} rejected the call: {details}",
                   hint=tr("Every process of a cluster needs the same TFTEACH_CLUSTER_TOKEN "
                           "in its environment (LocalCluster passes it to its tasks)."))
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details:
        return cls(f"Task {where} refused a message: {details}", hint=message_size_hint())
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return cls(f"Call to task {where} timed out: {details}",
                   hint=tr("{task} did not answer before the call's deadline "
                           "(RunOptions.timeout_in_ms or ConfigProto.operation_timeout_in_ms): "
                           "it may be stopped (suspended, paused in a debugger), overloaded or "
                           "waiting for another task. Check that its process runs, or give "
                           "the step a longer timeout.",
                           task=where if task or not address else f"The task at {address}"))
    if code in _GARBAGE_CODES:  # no tfteach status: the peer does not speak our gRPC
        return errors.UnavailableError(
            f"Task {where} is unavailable: its answer is not tfteach's gRPC ({details})",
            hint=tr("Something else listens at {address}, or an older tfteach: check the "
                    "cluster spec's address and that a tfteach task (tfteach-server, "
                    "tf.train.Server, LocalCluster) runs there.", address=address or where))
    return cls(f"Call to task {where} failed: {details}")
