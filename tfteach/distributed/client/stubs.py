"""Typed calls to one task: ``WorkerClient`` (WorkerService) and ``MasterClient``
(MasterService), made by ``ClusterClient.worker`` / ``ClusterClient.master``.

Their methods take and return Python values and raise ``tfteach.errors`` (a dead task
becomes UnavailableError naming the task). The segment protocol (``_call_with_segments``):
to a task that proved it shares this process's /dev/shm (``ClusterClient.shm_shared``,
``shm_probe``), large tensors of a RunStep or RunGraph request go in a reused segment of
ours (``shm``) and the answer's in a reply segment we offer; gRPC carries only the names.
A task that refuses them gets the request again, every tensor inline. RecvTensor: one
RecvTensorInline answers with the whole tensor (or a segment: for a tensor whose size the
receiver knows, a reused one it offers), a larger one then streams through RecvTensor; a
RecvTensorInline the task refuses (as many waits as it may) is asked again after a pause.
"""
from __future__ import annotations

import functools
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence

import grpc

from tfteach import errors
from tfteach.distributed.client import deadlines
from tfteach.distributed.client import in_process_master as local_master
from tfteach.distributed.contract.engine_api import RunResult
from tfteach.distributed.protocol import limits
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc
from tfteach.distributed.protocol.status import error_from_rpc
from tfteach.distributed.transport import bulk, lane, security, shm, shm_probe, wire

if TYPE_CHECKING:
    from tfteach.distributed.transport.bulk import BulkClient

RECV_TENSOR = "/tfteach.cluster.WorkerService/RecvTensor"


class Caller(Protocol):
    """What a stub asks of the client that made it (``ClusterClient`` is the one): channels,
    stubs and kept streams per task address, the call metadata, and what it learned of each
    task (shared memory proven, lane, streams refused)."""

    bulk: "BulkClient | None"

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]: ...
    def channel(self, address: str) -> grpc.Channel: ...
    def stub(self, stub_class: Callable[[grpc.Channel], Any], address: str) -> Any: ...
    def stream(self, stub_class: Callable[[grpc.Channel], Any], address: str,
               method: str) -> Any: ...
    def keep_stream(self, address: str, method: str, stream: Any) -> None: ...
    def streams_allowed(self, address: str, method: str) -> bool: ...
    def streams_refused(self, address: str, method: str) -> None: ...
    def reconnected(self, address: str, err: grpc.RpcError) -> bool: ...
    def shm_shared(self, address: str, wait: float | bool = False) -> bool: ...
    def learn_shm(self, address: str, proven: bool) -> None: ...
    def learn_lane(self, address: str, name: str, host_key: str) -> None: ...
    def learn_status(self, address: str, response: Any, probe: Any) -> dict[str, Any]: ...


class _Stub:
    """Calls one service of one task; converts failures to tfteach errors."""

    stub_class: Callable[[grpc.Channel], Any]

    def __init__(self, client: Caller, address: str,
                 task_name: str | None) -> None:
        self.client = client
        self.address = address
        self.task_name = task_name
        self._stub = client.stub(self.stub_class, address)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address!r}, task_name={self.task_name!r})"

    def _call(self, method: str, request: Any, timeout: float | None = None) -> Any:
        """A unary call. One that failed to connect, to a task that has started (or
        restarted) since its channel last failed to reach it, is sent again once the
        channel reconnects (``ClusterClient.reconnected``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for last in (False, True):
            left = _left(deadline)
            try:
                return getattr(self._stub, method)(request, timeout=left,
                                                   metadata=self.client.metadata)
            except grpc.RpcError as err:
                if last or not self.client.reconnected(self.address, err):
                    raise error_from_rpc(err, self.task_name, self.address) from None

    def _call_with_segments(self, send: Callable[[Any], Any], request: Any, field: Any,
                            tensors: Mapping[str, Any],
                            reply_bytes: int) -> tuple[Any, Any]:
        """``send(request)`` with ``tensors`` added to the request's repeated NamedTensor
        ``field``: through shared memory (``_send_segments``) if the task proved it shares
        this host's, else inline; a task that refuses the segments gets the request again
        inline, and no segment from now on. Return ``(answer, reply segment or None)``;
        the caller copies the tensors out of the reply segment, then gives it back
        (``shm.give_back``)."""
        if self.client.shm_shared(self.address, wait=True):
            try:
                return self._send_segments(send, request, field, tensors, reply_bytes)
            except errors.OpError as err:
                if not shm_probe.refused(err):
                    raise
            self.client.learn_shm(self.address, False)
            for name in ("shm_host", "reply_shm", "reply_shm_bytes"):
                request.ClearField(name)
            del field[:]
        wire.add_named(field, tensors)
        return send(request), None

    def _send_segments(self, send: Callable[[Any], Any], request: Any, field: Any,
                       tensors: Mapping[str, Any], reply_bytes: int) -> tuple[Any, Any]:
        """``_call_with_segments`` to a task of this host: the large tensors in a reused
        segment of ours, or one of their own, and a reused segment of ``reply_bytes``
        offered for the answer's large tensors."""
        request.shm_host = shm.host_key()
        sending = shm.reused_segment(wire.segment_bytes(tensors))
        if sending is None:
            own = wire.add_named(field, tensors, shm_ok=True)
        else:
            own = wire.add_named(field, tensors, sending.view, sending.name, shm_ok=True)
        reply = shm.reused_segment(reply_bytes)
        if reply is not None:
            request.reply_shm, request.reply_shm_bytes = reply.name, reply.size
        try:
            response = send(request)
        except BaseException:   # a late reader or writer must never find them reused
            shm.give_back(sending, reuse=False)
            shm.give_back(reply, reuse=False)
            raise
        finally:                # taken by the task, or of no more use
            for name in own:
                shm.release(name)
        shm.give_back(sending)
        return response, reply

    def _sender(self, method: str, timeout: float | None) -> Callable[[Any], Any]:
        """How to send a ``method`` request: on its stream (``method + "Stream"``), with
        ``timeout`` as its deadline (``deadlines``), or as a unary call while the task
        refuses streams."""
        if self.client.streams_allowed(self.address, method + "Stream"):
            deadline = None if timeout is None else time.monotonic() + timeout
            return functools.partial(self._streamed, method + "Stream", deadline=deadline)
        return functools.partial(self._call, method, timeout=timeout)

    def _streamed(self, method: str, request: Any, again: bool = True,
                  deadline: float | None = None) -> Any:
        """A call of ``method`` as a message on one of the client's idle streams to this
        task (``ClusterClient.stream``); a stream that failed is closed, not reused (Ctrl-C
        closes it too, which cancels the call on the task), and so is one whose call is
        still waiting at ``deadline``: DeadlineExceededError naming the task, as a unary
        call's deadline gives. One that failed to connect is sent again as ``_call``
        does."""
        stream = self.client.stream(self.stub_class, self.address, method)
        watch = deadlines.watch(deadline, stream)
        try:
            answer = stream.call(request)
        except grpc.RpcError as err:
            stream.close()
            if watch is not None:
                watch.done()
                if watch.expired:
                    raise error_from_rpc(lane.LaneError(grpc.StatusCode.DEADLINE_EXCEEDED,
                                                        "Deadline Exceeded"),
                                         self.task_name, self.address) from None
            if limits.is_busy(err):     # refused before reading the request: send it alone
                self.client.streams_refused(self.address, method)
                return self._call(method[:-len("Stream")], request, _left(deadline))
            if again and self.client.reconnected(self.address, err):
                return self._streamed(method, request, again=False, deadline=deadline)
            raise error_from_rpc(err, self.task_name, self.address) from None
        except BaseException:
            stream.close()
            raise
        finally:
            if watch is not None:
                watch.done()
        self.client.keep_stream(self.address, method, stream)
        return answer

    def _result(self, call: grpc.Future) -> Any:
        """The answer of a call started with ``.future()``, errors as ``tfteach.errors``."""
        try:
            return call.result()
        except grpc.RpcError as err:
            raise error_from_rpc(err, self.task_name, self.address) from None


class WorkerClient(_Stub):
    """WorkerService calls on Python values."""

    stub_class = pb_grpc.WorkerServiceStub

    def get_status(self, timeout: float | None = None) -> dict[str, Any]:
        """``{"task", "pid", "last_step", "shm_host", "lane", "devices": [attribute
        dicts]}`` (``ClusterClient.learn_status``); this client sends the task's streams on
        its lane from now on, and large tensors through shared memory, if the task proved
        it can."""
        probe = shm_probe.Probe()
        try:
            response = self._call("GetStatus", probe.request(), timeout)
        finally:
            probe.close()
        return self.client.learn_status(self.address, response, probe)

    def register_graph(self, graph_def: bytes, config: bytes = b"",
                       session_handle: str = "") -> str:
        request = pb.RegisterGraphRequest(graph_def=graph_def, config=config,
                                          session_handle=session_handle)
        return self._call("RegisterGraph", request).graph_handle

    def run_graph(self, graph_handle: str, step_id: int, feeds: Mapping[str, Any] = {},
                  fetch_names: Sequence[str] = (), options: bytes = b"",
                  timeout: float | None = None) -> tuple[dict[str, Any], bytes]:
        """Run a registered graph; return ``(fetched tensors, metadata)``."""
        result = self.run_partition(graph_handle, step_id, feeds, fetch_names, options, timeout)
        return dict(result.tensors), result.metadata

    def run_partition(self, graph_handle: str, step_id: int, feeds: Mapping[str, Any],
                      fetch_names: Sequence[str], options: bytes = b"",
                      timeout: float | None = None, reply_bytes: int = 0) -> RunResult:
        """RunGraph as a blocking call (its answer is polled on this thread: no helper
        thread per call); a RunResult of the fetches, the metadata and the values of the
        partition's sends addressed to the caller. Between processes on one host, large
        tensors travel through shared memory both ways (``_call_with_segments``; answers
        in a reused segment of ``reply_bytes`` if that is not 0, else a segment per
        tensor). ``RunResult.shm_bytes`` tells the size to offer next time."""
        request = pb.RunGraphRequest(graph_handle=graph_handle, step_id=step_id,
                                     recv_key=list(fetch_names), options=options)
        response, reply = self._call_with_segments(self._sender("RunGraph", timeout), request,
                                                   request.send, feeds, reply_bytes)
        try:
            sent = {item.name: self._sent_value(item.tensor, reply, step_id, timeout)
                    for item in response.sent}
        finally:
            shm.give_back(reply)
        fetched = {item.name: self._sent_value(item.tensor, None, step_id, timeout)
                   for item in response.recv if item.tensor.header.stream_key}
        fetched = {**wire.from_named(i for i in response.recv if i.name not in fetched),
                   **fetched} if fetched else wire.from_named(response.recv)
        return RunResult(fetched, response.metadata, sent, wire.reply_bytes(response.sent))

    def _sent_value(self, proto: pb.TensorProto, reply: "shm.ReusedSegment | None",
                    step_id: int, timeout: float | None) -> Any:
        """A value of a RunGraph answer's ``sent`` (or ``recv``): in the message or a segment
        (``wire.from_reply``), or, from a task on another host, left there under the
        header's ``stream_key`` and pulled (``_pull``)."""
        key = proto.header.stream_key
        if not key:
            return wire.from_reply(proto, reply)[0]
        request = _recv_request(step_id, key, 300.0 if timeout is None else timeout, False)
        return self._pull(request, proto.header.bulk_port)[0]

    def cleanup_graph(self, step_id: int, timeout: float | None = None) -> None:
        self._call("CleanupGraph", pb.CleanupGraphRequest(step_id=step_id), timeout)

    def deregister_graph(self, graph_handle: str) -> None:
        self._call("DeregisterGraph", pb.DeregisterGraphRequest(graph_handle=graph_handle))

    def cleanup_all(self, containers: Sequence[str] = ()) -> None:
        self._call("CleanupAll", pb.CleanupAllRequest(container=list(containers)))

    def recv_tensor(self, step_id: int, key: str, timeout: float = 300.0,
                    use_shm: bool = True) -> tuple[Any, bool]:
        """Pull tensor ``key`` of ``step_id``; return ``(array, is_dead)``.

        One unary RecvTensorInline answers with the whole tensor (inline, or through shared
        memory if ``use_shm`` and the sender is on this host); a larger tensor then streams
        in chunks through RecvTensor."""
        return self.recv_result(self.start_recv(step_id, key, timeout, use_shm),
                                step_id, timeout, use_shm)

    def start_recv(self, step_id: int, key: str, timeout: float = 300.0,
                   use_shm: bool = True, reply_bytes: int = 0) -> grpc.Future:
        """``recv_tensor``'s unary call, in flight (no thread of ours waits on it). A
        tensor of ``reply_bytes`` (``SEGMENT_MIN_BYTES`` or more) is asked for in a
        reused segment of ours, which a sender on this host writes it into."""
        use_shm = use_shm and self.client.shm_shared(self.address, wait=timeout)
        request = _recv_request(step_id, key, timeout, use_shm)
        segment = shm.reused_segment(reply_bytes) \
            if use_shm and reply_bytes >= shm.SEGMENT_MIN_BYTES else None
        if segment is not None:
            request.reply_shm, request.reply_shm_bytes = segment.name, segment.size
        return _RecvCall(self._stub.RecvTensorInline.future(
            request, timeout=timeout + 30.0, metadata=self.client.metadata), request, segment)

    @staticmethod
    def recv_streams(call: grpc.Future) -> bool:
        """Whether a finished ``start_recv`` call left its tensor to stream, or was
        refused and must be asked again (so that ``recv_result`` would block)."""
        error = call.exception()
        return limits.is_busy(error) if error is not None else bool(call.result().stream_key)

    def recv_result(self, call: grpc.Future, step_id: int, timeout: float = 300.0,
                    use_shm: bool = True) -> tuple[Any, bool]:
        """``(array, is_dead)`` of a ``start_recv`` call, streaming it if it must."""
        segment = call.segment
        try:
            reply = self._recv_reply(call, timeout)
            if not reply.stream_key:
                value = wire.from_reply(reply.tensor, segment, lend=True)
        except BaseException:   # a late writer must never find it reused
            shm.give_back(segment, reuse=False)
            raise
        shm.give_back(segment)
        if not reply.stream_key:
            return value
        use_shm = use_shm and self.client.shm_shared(self.address)
        return self._pull(_recv_request(step_id, reply.stream_key, timeout, use_shm),
                          reply.bulk_port)

    def bulk_port(self, nbytes: int) -> int:
        """The task's bulk port if a tensor of ``nbytes`` from it should be asked for
        there at once (``recv_bulk``): large enough, and the port is known; else 0."""
        known = self.client.bulk.port_of(self.address) if self.client.bulk else 0
        return known if nbytes >= bulk.MIN_BYTES else 0

    def recv_bulk(self, step_id: int, key: str, timeout: float, port: int) -> tuple[Any, bool]:
        """``recv_tensor`` on the task's bulk ``port``, which waits for the tensor; through
        gRPC where that port turned out unreachable."""
        try:
            return self.client.bulk.fetch(self.address, port, step_id, key, timeout)
        except bulk.Unreachable:
            return self.recv_tensor(step_id, key, timeout)

    def _pull(self, request: pb.RecvTensorRequest, bulk_port: int) -> tuple[Any, bool]:
        """``(array, is_dead)`` of a tensor the task left under ``request``'s key: from
        its bulk port when it names one and this client can reach it, else streamed."""
        if bulk_port and self.client.bulk is not None:
            self.client.bulk.learn(self.address, bulk_port)
            try:
                return self.client.bulk.fetch(self.address, bulk_port, request.step_id,
                                              request.rendezvous_key, request.timeout_s)
            except bulk.Unreachable:
                pass
        try:
            return self._recv_stream(request)
        except grpc.RpcError as err:
            raise error_from_rpc(err, self.task_name, self.address) from None

    def _recv_reply(self, call: "_RecvCall", timeout: float) -> Any:
        """The answer of a ``start_recv`` call, asked again after a pause while the task
        refuses it (it holds as many waits as it may: ``limits.WaitSlots``)."""
        deadline, pause = time.monotonic() + timeout, 0.02
        while True:
            try:
                return call.result()
            except grpc.RpcError as err:
                if not (limits.is_busy(err) and time.monotonic() < deadline):
                    raise error_from_rpc(err, self.task_name, self.address) from None
            time.sleep(pause)
            pause = min(2 * pause, 0.5)
            call = _RecvCall(self._stub.RecvTensorInline.future(
                call.request, timeout=timeout + 30.0, metadata=self.client.metadata),
                call.request, call.segment)

    def _recv_stream(self, request: pb.RecvTensorRequest) -> tuple[Any, bool]:
        raw_call = self.client.channel(self.address).unary_stream(
            RECV_TENSOR, request_serializer=pb.RecvTensorRequest.SerializeToString,
            response_deserializer=None)         # raw bytes: wire.assemble parses them
        responses = raw_call(request, timeout=request.timeout_s + 30.0,
                             metadata=self.client.metadata)
        return wire.assemble(iter(responses))


class _RecvCall:
    """A RecvTensorInline call in flight (a ``grpc.Future``), its request, to ask again,
    and the reused segment it offers (or None); ``add_done_callback`` passes this object."""

    def __init__(self, future: grpc.Future, request: pb.RecvTensorRequest,
                 segment: "shm.ReusedSegment | None" = None) -> None:
        self.future, self.request, self.segment = future, request, segment

    def __getattr__(self, name: str) -> Any:
        return getattr(self.future, name)

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        self.future.add_done_callback(lambda _future: fn(self))


class MasterClient(_Stub):
    """MasterService calls on Python values (what ``Session('grpc://...')`` uses)."""

    stub_class = pb_grpc.MasterServiceStub

    def __init__(self, client: Caller, address: str,
                 task_name: str | None) -> None:
        super().__init__(client, address, task_name)
        self._reply_bytes: dict[tuple, int] = {}    # fetches -> reply segment size they need

    def create_session(self, graph_def: bytes, config: bytes = b"",
                       timeout: float | None = None) -> tuple[str, int]:
        """Return ``(session_handle, graph_version)``. The master's lane is used only if it
        proves that it shares this host (``ClusterClient.shm_shared``: a probe, sent while
        the session is made)."""
        self.client.shm_shared(self.address)
        response = self._call("CreateSession", pb.CreateSessionRequest(
            graph_def=graph_def, config=config, target=f"grpc://{self.address}"), timeout)
        shared = self.client.shm_shared(self.address, wait=True)
        self.client.learn_lane(self.address, response.lane, response.shm_host if shared else "")
        return response.session_handle, response.graph_version

    def extend_session(self, session_handle: str, graph_def: bytes,
                       current_graph_version: int, timeout: float | None = None) -> int:
        return self._call("ExtendSession", pb.ExtendSessionRequest(
            session_handle=session_handle, graph_def=graph_def,
            current_graph_version=current_graph_version), timeout).new_graph_version

    def run_step(self, session_handle: str, feeds: Mapping[str, Any] = {},
                 fetches: Sequence[str] = (), targets: Sequence[str] = (),
                 options: bytes = b"", timeout: float | None = None
                 ) -> tuple[dict[str, Any], bytes]:
        """Run one step; return ``(fetched tensors, metadata)``. Ctrl-C cancels the call,
        and the master then aborts the step on every task. A master that is a Server of
        this process runs it on this thread, with no RPC (``local_master``, TF's
        LocalMaster), unless the call has a deadline. A master on this host (known
        from ``create_session``) gets large feeds through shared memory and answers
        large fetches so (``_call_with_segments``)."""
        engine = None if timeout is not None else local_master.lookup(
            self.address, dict(self.client.metadata).get(security.TOKEN_METADATA_KEY, ""))
        if engine is not None:      # the master is a Server of this process
            result = local_master.run_step(engine, session_handle, feeds, fetches, targets,
                                           options)
            return dict(result.tensors), result.metadata
        request = pb.RunStepRequest(session_handle=session_handle, fetch=list(fetches),
                                    target=list(targets), options=options)
        key = tuple(fetches)
        # A message on a stream (its timeout watched by ``deadlines``). Ctrl-C raises
        # KeyboardInterrupt while it waits, which cancels the stream; the master then
        # aborts the step on every task.
        response, reply = self._call_with_segments(self._sender("RunStep", timeout), request,
                                                   request.feed, feeds,
                                                   self._reply_bytes.get(key, 0))
        try:
            tensors = wire.from_answer(response.tensor, reply)
        finally:
            shm.give_back(reply)
        self._reply_bytes[key] = wire.reply_bytes(response.tensor)
        return tensors, response.metadata

    def close_session(self, session_handle: str, timeout: float | None = None) -> None:
        self._call("CloseSession", pb.CloseSessionRequest(session_handle=session_handle),
                   timeout)

    def list_devices(self, session_handle: str = "",
                     timeout: float | None = None) -> tuple[list[dict], list[dict]]:
        """``(local devices, remote devices)`` as attribute dicts."""
        response = self._call("ListDevices", pb.ListDevicesRequest(session_handle=session_handle),
                              timeout)
        return ([device_dict(d) for d in response.local_device],
                [device_dict(d) for d in response.remote_device])

    def reset(self, containers: Sequence[str] = (), device_filters: Sequence[str] = ()) -> None:
        self._call("Reset", pb.ResetRequest(container=list(containers),
                                            device_filters=list(device_filters)))


def _left(deadline: float | None) -> float | None:
    """The seconds left until ``deadline`` (None: no deadline)."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _recv_request(step_id: int, key: str, timeout: float,
                  use_shm: bool) -> pb.RecvTensorRequest:
    return pb.RecvTensorRequest(step_id=step_id, rendezvous_key=key, timeout_s=timeout,
                                shm_host=shm.host_key() if use_shm else "")


def device_dict(device: pb.DeviceAttributes) -> dict[str, Any]:
    """A DeviceAttributes message as the engine's attribute dict."""
    return {"name": device.name, "device_type": device.device_type,
            "memory_limit": device.memory_limit,
            "physical_device_desc": device.physical_device_desc,
            "incarnation": device.incarnation}


def status_dict(response: pb.GetStatusResponse) -> dict[str, Any]:
    """A GetStatus answer as ``{"task", "pid", "last_step", "shm_host", "lane",
    "devices"}``."""
    return {"task": response.task, "pid": response.pid, "last_step": response.last_step,
            "shm_host": response.shm_host, "lane": response.lane,
            "devices": [device_dict(d) for d in response.device_attributes]}
