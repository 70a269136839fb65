"""The gRPC servicers: MasterService and WorkerService, thin adapters over an ``Engine``.

Each method decodes its request, calls one engine method and encodes the answer; every
failure leaves as a gRPC status through ``status.rpc_method``/``status.rpc_stream``.
RecvTensorInline and RecvTensor wait on the engine in short slices so a cancelled call
frees its thread. RunStep and RunGraph read large tensors from the caller's reused segments
and write the large tensors they answer into the caller's reply segment when it offers one
and they fit (``shm``); RunStepStream and RunGraphStream serve the same calls one after
another on a long-lived stream. A call whose caller goes away (Ctrl-C, its process killed;
on gRPC or the lane) is cancelled (``Cancellation``): a RunStep aborts its step on every
task, a RunGraph its step on this task (``cleanup_graph``, as TF's worker aborts the
step of a cancelled RunGraph). A request that names segments of a caller not of this host
is refused, and its client sends it again inline; GetStatus answers a caller's probe
(``shm_probe``). RecvTensorInline answers with the whole tensor (inline, or a shared-memory
segment when the receiver runs on this host: ``shm_callers.Caller``; the receiver's
reused segment when it offers one that fits); a tensor too
large for that goes back to the engine under ``key + STREAM_SUFFIX`` and the receiver
streams it in chunks with RecvTensor, or takes it from the task's bulk port (``bulk``),
which the answer names; so do a RunGraph answer's large tensors for a caller on
another host.
Limits (``limits``): the task's streams share ``StreamSlots`` (a stream beyond them is
refused; an idle one is cancelled), and its waits for tensors not yet sent share
``WaitSlots``, so idle or waiting callers never hold every RPC thread.
"""
from __future__ import annotations

import time
from typing import Any, Iterator, Mapping

import grpc
import numpy as np
from google.protobuf.message import DecodeError

from tfteach import errors
from tfteach.distributed.contract.engine_api import Cancellation, Engine, as_run_result, serving
from tfteach.distributed.contract.engine_args import parse_options
from tfteach.distributed.contract.rendezvous import DEFAULT_TIMEOUT_S
from tfteach.distributed.protocol import limits
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc
from tfteach.distributed.protocol.status import abort, malformed_hint, rpc_method, rpc_stream
from tfteach.distributed.transport import bulk, shm, shm_callers, shm_probe, wire
from tfteach.i18n import tr

WAIT_SLICE_S = 0.25
STREAM_SUFFIX = "#stream"
MAX_RECV_TIMEOUT_S = 3600.0
_DEVICE_FIELDS = ("name", "device_type", "memory_limit", "physical_device_desc", "incarnation")


def add_services(server: grpc.Server, engine: Engine,
                 task_name: str) -> tuple["MasterServicer", "WorkerServicer"]:
    """Serve MasterService and WorkerService on ``server``; returns the two servicers (a
    lane serves their streams too). Handlers come from the .proto's descriptors; a
    response that is already ``bytes`` (RecvTensor chunks) goes out as is."""
    streams = limits.StreamSlots()
    servicers = (MasterServicer(engine, streams), WorkerServicer(engine, task_name, streams))
    for servicer in servicers:
        service = pb.DESCRIPTOR.services_by_name[servicer.service_name]
        handlers = {method.name: _handler(servicer, method) for method in service.methods}
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service.full_name, handlers),))
    return servicers


def _handler(servicer: Any, method: Any) -> grpc.RpcMethodHandler:
    request_class = getattr(pb, method.input_type.name)
    if method.client_streaming:     # requests parsed by the handler (``_parsed``)
        return grpc.stream_stream_rpc_method_handler(getattr(servicer, method.name),
                                                     response_serializer=_serialize)
    make = grpc.unary_stream_rpc_method_handler if method.server_streaming \
        else grpc.unary_unary_rpc_method_handler
    return make(_parsing(getattr(servicer, method.name), request_class,
                         method.server_streaming), response_serializer=_serialize)


def _parsing(behavior: Any, request_class: Any, streaming: bool) -> Any:
    """``behavior`` called with its request parsed from the call's bytes; a request that
    does not parse ends the call with InvalidArgumentError (grpc's own parsing would answer
    INTERNAL and log a traceback)."""
    def parse(data: bytes, context: Any) -> Any:
        try:
            return request_class.FromString(data)
        except DecodeError:
            abort(context, errors.InvalidArgumentError(
                f"Received a malformed {request_class.__name__}", hint=malformed_hint()))

    def serve_stream(data: bytes, context: Any) -> Iterator[Any]:
        yield from behavior(parse(data, context), context)

    def serve(data: bytes, context: Any) -> Any:
        return behavior(parse(data, context), context)
    return serve_stream if streaming else serve


def _parsed(messages: Iterator[bytes], request_class: Any) -> Iterator[Any]:
    """The requests of a stream, until the caller closes or cancels it (not an error: an
    idle stream ends so when its client closes). A request that does not parse ends it with
    InvalidArgumentError (left to grpc, a stream whose request failed to parse could keep
    the server from stopping)."""
    while True:
        try:
            message = next(messages)
        except (StopIteration, grpc.RpcError):  # the caller closed or cancelled the stream
            return
        try:
            yield request_class.FromString(message)
        except DecodeError:
            raise errors.InvalidArgumentError(
                f"Received a malformed {request_class.__name__} on a stream",
                hint=malformed_hint()) from None


def _serialize(message: Any) -> bytes:
    return message if isinstance(message, bytes) else message.SerializeToString()


def _caller(context: Any) -> shm_callers.Caller:
    """The calling process, for shared memory (known already on a lane:
    ``lane_server.LaneContext``); once the call or stream ends, its segments are reclaimed
    if it dies (``shm_callers.Caller.close``)."""
    caller = getattr(context, "shm_caller", None) or shm_callers.Caller(context.peer())
    context.add_callback(caller.close)
    return caller


def _tensors(named: Any, sender: shm_callers.Caller | None) -> dict[str, Any]:
    """A request's tensors; those in segments only from a caller that shares this host
    (``sender``, from ``_sender``; else the request is refused before any is read, and
    its client sends it again inline: ``shm_probe``)."""
    if sender is None:
        shm_probe.refuse_segments(named)
    return wire.from_named(named, sender)


def _bulk_asked(options: bytes) -> frozenset:
    """The stream keys a RunGraph caller asked for on the bulk port before its call
    (options ``bulk_asked``; ``stubs.WorkerClient._ask_early``)."""
    keys = parse_options(options).get("bulk_asked", [])
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise errors.InvalidArgumentError(
            f"RunGraph options bulk_asked must be a list of strings, not {keys!r:.80}")
    return frozenset(keys)


def _sender(request: Any, caller: shm_callers.Caller) -> shm_callers.Caller | None:
    """``caller`` if it shares this host's /dev/shm (found by ``shm_callers.Caller``, not
    taken from the request), else None. A reply segment it offers must be its own."""
    if not caller.shares_host(request.shm_host):
        return None
    if getattr(request, "reply_shm", ""):
        caller.owner_of(request.reply_shm)
    return caller


def _add_answer(field: Any, tensors: Mapping[str, Any], request: Any,
                sender: shm_callers.Caller | None) -> None:
    """Add ``tensors`` to an answer's repeated NamedTensor ``field``: the large ones into
    the caller's reply segment if it offered one and shares this host (``sender``)."""
    segment = (shm.mapped(request.reply_shm, request.reply_shm_bytes,
                          sender.owner_of(request.reply_shm))
               if sender is not None and request.reply_shm else None)
    wire.add_named(field, tensors, segment, request.reply_shm, sender is not None)


def _receiver_shares(request: pb.RecvTensorRequest, context: Any) -> bool:
    """Whether the receiver of a tensor shares this host's /dev/shm (``shm_callers.Caller``)."""
    return shm_callers.Caller(context.peer()).shares_host(request.shm_host)


def _into_reply_segment(proto: pb.TensorProto, value: Any, request: pb.RecvTensorRequest,
                        context: Any) -> bool:
    """Write a large tensor into the reused segment the receiver offers, if it shares
    this host and the tensor fits; whether it was."""
    if not request.reply_shm:
        return False
    receiver = _sender(request, shm_callers.Caller(context.peer()))
    if receiver is None:
        return False
    segment = shm.mapped(request.reply_shm, request.reply_shm_bytes,
                         receiver.owner_of(request.reply_shm))
    return segment is not None and \
        wire.fill_into(proto, value, segment, request.reply_shm, 0) is not None


def _cancelled_by_client(method: str) -> errors.CancelledError:
    """The error of a RunStep or RunGraph whose caller went away before its step started."""
    return errors.CancelledError(f"{method} was cancelled by its client")


def _call_cancellation(context: Any, method: str) -> Cancellation:
    """The ``Cancellation`` of a unary call, cancelled if its caller goes away (Ctrl-C, its
    process killed); CancelledError if it has already."""
    cancellation = Cancellation()
    if not context.add_callback(cancellation.cancel):
        raise _cancelled_by_client(method)
    return cancellation


def _cancellable(requests: Iterator[Any], context: Any,
                 method: str) -> Iterator[tuple[Any, Cancellation]]:
    """Each request of a stream (``StreamSlots.serve``) with its call's ``Cancellation``:
    the caller closing or cancelling the stream (Ctrl-C, its process killed) cancels the
    call running then. A request read just before the stream ended is not run: the
    stream's callbacks ran before its call had a ``Cancellation`` to cancel."""
    running: list[Cancellation] = []
    if not context.add_callback(lambda: [c.cancel() for c in running]):
        raise _cancelled_by_client(method)
    for request in requests:
        running[:] = [Cancellation()]
        if not context.is_active():     # checked once the callbacks would see it
            raise _cancelled_by_client(method)
        yield request, running[0]


def device_attributes(device: dict[str, Any]) -> pb.DeviceAttributes:
    """An engine's device dict as a DeviceAttributes message."""
    return pb.DeviceAttributes(**{key: device[key] for key in _DEVICE_FIELDS if key in device})


class MasterServicer(pb_grpc.MasterServiceServicer):
    """TF's MasterService roles on top of ``engine``."""

    service_name = "MasterService"

    def __init__(self, engine: Engine, streams: limits.StreamSlots | None = None) -> None:
        self.engine = engine
        self.streams = streams or limits.StreamSlots()
        self.lane = ""      # the task's lane (``lane_server.serve`` names it), for same-host callers

    @rpc_method
    def CreateSession(self, request: pb.CreateSessionRequest, context: Any) -> Any:
        handle = self.engine.create_session(request.graph_def, request.config)
        return pb.CreateSessionResponse(session_handle=handle, graph_version=0,
                                        shm_host=shm.host_key() if shm.available() else "",
                                        lane=self.lane)

    @rpc_method
    def ExtendSession(self, request: pb.ExtendSessionRequest, context: Any) -> Any:
        version = self.engine.extend_session(request.session_handle, request.graph_def,
                                             request.current_graph_version)
        return pb.ExtendSessionResponse(new_graph_version=version)

    @rpc_method
    def RunStep(self, request: pb.RunStepRequest, context: Any) -> Any:
        cancellation = _call_cancellation(context, "RunStep")  # Ctrl-C aborts the step
        return self._run_step(request, cancellation, _caller(context))

    @rpc_stream
    def RunStepStream(self, requests: Iterator[bytes], context: Any) -> Iterator[Any]:
        """RunStep for each request of the stream, in turn; the client closing or
        cancelling the stream (Ctrl-C, its process killed) aborts the step running then
        (``_cancellable``)."""
        served = self.streams.serve(_parsed(requests, pb.RunStepRequest), context)
        calls = _cancellable(served, context, "RunStep")
        caller = _caller(context)
        for request, cancellation in calls:
            yield self._run_step(request, cancellation, caller)

    def _run_step(self, request: pb.RunStepRequest, cancellation: Cancellation,
                  caller: shm_callers.Caller) -> Any:
        sender = _sender(request, caller)   # once a request (a foreign segment: refused)
        with serving(cancellation):
            result = as_run_result(self.engine.run_step(
                request.session_handle, _tensors(request.feed, sender),
                list(request.fetch), list(request.target), request.options))
        response = pb.RunStepResponse(metadata=result.metadata)
        _add_answer(response.tensor, result.tensors, request, sender)
        return response

    @rpc_method
    def CloseSession(self, request: pb.CloseSessionRequest, context: Any) -> Any:
        self.engine.close_session(request.session_handle)
        return pb.CloseSessionResponse()

    @rpc_method
    def ListDevices(self, request: pb.ListDevicesRequest, context: Any) -> Any:
        local, remote = self.engine.list_devices(request.session_handle)
        return pb.ListDevicesResponse(local_device=[device_attributes(d) for d in local],
                                      remote_device=[device_attributes(d) for d in remote])

    @rpc_method
    def Reset(self, request: pb.ResetRequest, context: Any) -> Any:
        self.engine.reset(list(request.container), list(request.device_filters))
        return pb.ResetResponse()


class WorkerServicer(pb_grpc.WorkerServiceServicer):
    """TF's WorkerService roles on top of ``engine``, for the task named ``task_name``."""

    service_name = "WorkerService"

    def __init__(self, engine: Engine, task_name: str,
                 streams: limits.StreamSlots | None = None) -> None:
        self.engine = engine
        self.task_name = task_name
        self.streams = streams or limits.StreamSlots()
        self.waits = limits.WaitSlots()
        self.lane = ""
        self.bulk_port = 0      # the task's ``bulk.BulkServer`` port, where it has one

    @rpc_method
    def GetStatus(self, request: pb.GetStatusRequest, context: Any) -> Any:
        import os

        devices = [device_attributes(d) for d in self.engine.get_status()]
        return pb.GetStatusResponse(device_attributes=devices, task=self.task_name,
                                    last_step=self.engine.last_step(), pid=os.getpid(),
                                    shm_host=shm.host_key() if shm.available() else "",
                                    lane=self.lane,
                                    shm_proof=shm_probe.answer(request, _caller(context)))

    @rpc_method
    def RegisterGraph(self, request: pb.RegisterGraphRequest, context: Any) -> Any:
        handle = self.engine.register_graph(request.graph_def, request.config,
                                            request.session_handle)
        return pb.RegisterGraphResponse(graph_handle=handle)

    @rpc_method
    def RunGraph(self, request: pb.RunGraphRequest, context: Any) -> Any:
        cancellation = _call_cancellation(context, "RunGraph")  # its master killed: abort
        return self._run_graph(request, cancellation, _caller(context))

    @rpc_stream
    def RunGraphStream(self, requests: Iterator[bytes],
                       context: Any) -> Iterator[Any]:
        """RunGraph for each request of the stream, in turn; the first failure ends the
        stream with its status, as it would end that call. The master closing or
        cancelling the stream (Ctrl-C, its process killed) aborts the step running then
        (``_cancellable``)."""
        served = self.streams.serve(_parsed(requests, pb.RunGraphRequest), context)
        calls = _cancellable(served, context, "RunGraph")
        caller = _caller(context)
        for request, cancellation in calls:
            yield self._run_graph(request, cancellation, caller)

    def _run_graph(self, request: pb.RunGraphRequest, cancellation: Cancellation,
                   caller: shm_callers.Caller) -> Any:
        """Run the partition; a cancelled call aborts its step on this task, as TF's worker
        does (``cleanup_graph``: its waits end, its tensors are dropped), so a step whose
        master died takes nothing meant for a later one."""
        step_id = request.step_id
        cancellation.on_cancel(lambda: self.engine.cleanup_graph(step_id))
        with serving(cancellation):
            return self._graph_answer(request, caller)

    def _graph_answer(self, request: pb.RunGraphRequest, caller: shm_callers.Caller) -> Any:
        sender = _sender(request, caller)   # once a request (a foreign segment: refused)
        asked = _bulk_asked(request.options)
        result = as_run_result(self.engine.run_graph(
            request.graph_handle, request.step_id, _tensors(request.send, sender),
            list(request.recv_key), request.options))
        response = pb.RunGraphResponse(metadata=result.metadata)
        fetched, sent = result.tensors, result.sent
        if (fetched or sent) and (sender is None or asked):
            fetched = self._leave_large(response.recv, request.step_id, fetched, asked)
            sent = self._leave_large(response.sent, request.step_id, sent, asked)
        wire.add_named(response.recv, fetched)
        _add_answer(response.sent, sent, request, sender)
        return response

    def _inline_bytes(self) -> int:
        """The largest tensor an answer carries in its message: below ``bulk.MIN_BYTES``
        when larger ones can leave on the bulk port (fewer copies), else
        ``wire.INLINE_BYTES``."""
        return bulk.MIN_BYTES - 1 if self.bulk_port else wire.INLINE_BYTES

    def _leave_large(self, field: Any, step_id: int, tensors: Mapping[str, Any],
                     asked: frozenset = frozenset()) -> dict:
        """For a caller on another host: each numeric tensor of ``tensors`` over
        ``_inline_bytes()``, or whose stream key the caller already asked for on the bulk
        port (``asked``), stays in the rendezvous under ``name + STREAM_SUFFIX``, which
        its header in ``field`` names with the bulk port (the caller takes it there, or
        streams it with RecvTensor, where a bytes field in a message costs several
        copies); the others are returned, to go inline."""
        inline = {}
        for name, value in tensors.items():
            array = np.asarray(value)
            if array.dtype.kind not in "biufc" or (array.nbytes <= self._inline_bytes() and
                                                   name + STREAM_SUFFIX not in asked):
                inline[name] = value
                continue
            header, _ = wire.encode(array)
            header.stream_key, header.bulk_port = name + STREAM_SUFFIX, self.bulk_port
            self.engine.put_tensor(step_id, header.stream_key, array)
            field.add(name=name).tensor.header.CopyFrom(header)
        return inline

    @rpc_method
    def CleanupGraph(self, request: pb.CleanupGraphRequest, context: Any) -> Any:
        self.engine.cleanup_graph(request.step_id)
        return pb.CleanupGraphResponse()

    @rpc_method
    def DeregisterGraph(self, request: pb.DeregisterGraphRequest, context: Any) -> Any:
        self.engine.deregister_graph(request.graph_handle)
        return pb.DeregisterGraphResponse()

    @rpc_method
    def CleanupAll(self, request: pb.CleanupAllRequest, context: Any) -> Any:
        self.engine.cleanup_all(list(request.container))
        return pb.CleanupAllResponse()

    @rpc_stream
    def RecvTensor(self, request: pb.RecvTensorRequest,
                   context: grpc.ServicerContext) -> Iterator[bytes]:
        value, is_dead = self._wait_for_tensor(request, context)
        yield from wire.stream(value, is_dead=is_dead,
                               shm_ok=_receiver_shares(request, context))

    @rpc_method
    def RecvTensorInline(self, request: pb.RecvTensorRequest,
                         context: grpc.ServicerContext) -> Any:
        value, is_dead = self._wait_for_tensor(request, context)
        response = pb.RecvTensorInlineResponse()
        if not is_dead and _into_reply_segment(response.tensor, value, request, context):
            return response
        if wire.fill_reply(response.tensor, value, is_dead=is_dead,
                           shm_ok=_receiver_shares(request, context),
                           inline_bytes=self._inline_bytes()):
            return response
        stream_key = request.rendezvous_key + STREAM_SUFFIX
        self.engine.put_tensor(request.step_id, stream_key, value, is_dead)
        return pb.RecvTensorInlineResponse(stream_key=stream_key, bulk_port=self.bulk_port)

    def _wait_for_tensor(self, request: pb.RecvTensorRequest,
                         context: grpc.ServicerContext) -> tuple[Any, bool]:
        try:        # a tensor already there needs no wait slot
            return self.engine.recv_tensor(request.step_id, request.rendezvous_key, 0.0)
        except errors.DeadlineExceededError:
            pass
        with self.waits.hold():
            return self._wait_in_slices(request, context)

    def _wait_in_slices(self, request: pb.RecvTensorRequest,
                        context: grpc.ServicerContext) -> tuple[Any, bool]:
        timeout = request.timeout_s if request.timeout_s > 0 else DEFAULT_TIMEOUT_S
        timeout = min(timeout, MAX_RECV_TIMEOUT_S)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                return self.engine.recv_tensor(request.step_id, request.rendezvous_key,
                                               min(WAIT_SLICE_S, max(remaining, 0.0)))
            except errors.DeadlineExceededError:
                if remaining <= WAIT_SLICE_S:
                    raise errors.DeadlineExceededError(
                        f"Task {self.task_name} waited {timeout:g} s for tensor "
                        f"{request.rendezvous_key!r} of step {request.step_id}; it was "
                        "never sent",
                        hint=tr("The op that sends it may not have run: check the sending "
                                "task's log and that every task of the cluster is running.")
                    ) from None
                if not context.is_active():
                    raise errors.CancelledError("RecvTensor call was cancelled") from None
