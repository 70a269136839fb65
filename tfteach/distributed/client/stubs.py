"""Typed calls to one task: ``WorkerClient`` (WorkerService) and ``MasterClient``
(MasterService), made by ``ClusterClient.worker`` / ``ClusterClient.master`` on the task's
``route.TaskRoute``.

They build request messages and read answers; how a call travels (in-process, lane, gRPC
stream, unary call, shared memory) is the route's choice (``TaskRoute.call``,
``call_with_segments``). Their methods take and return Python values and raise
``tfteach.errors`` (a dead task becomes UnavailableError naming the task). RecvTensor: one
RecvTensorInline answers with the whole tensor (or a segment: for a tensor whose size the
receiver knows, a reused one it offers), a larger one then streams through RecvTensor (or
comes from the task's bulk port); a RecvTensorInline the task refuses (as many waits as it
may) is asked again after a pause.
"""
from __future__ import annotations

import functools
import json
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import grpc

from tfteach import errors
from tfteach.distributed.client import in_process_master as local_master
from tfteach.distributed.contract.engine_api import RunResult
from tfteach.distributed.protocol import limits
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.status import error_from_rpc
from tfteach.distributed.transport import bulk, shm, wire

if TYPE_CHECKING:
    from tfteach.distributed.client.route import TaskRoute

RECV_TENSOR = "/tfteach.cluster.WorkerService/RecvTensor"


class _Stub:
    """Calls one service of one task on its route; answers as Python values."""

    def __init__(self, route: "TaskRoute") -> None:
        self.route = route
        self.address = route.address

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.address!r}, task_name={self.task_name!r})"

    @property
    def task_name(self) -> str | None:
        return self.route.task_name

    def _result(self, call: grpc.Future) -> Any:
        """The answer of a call started with ``.future()``, errors as ``tfteach.errors``."""
        try:
            return call.result()
        except grpc.RpcError as err:
            raise error_from_rpc(err, self.task_name, self.address) from None


class WorkerClient(_Stub):
    """WorkerService calls on Python values."""

    def get_status(self, timeout: float | None = None) -> dict[str, Any]:
        """``{"task", "pid", "last_step", "shm_host", "lane", "devices": [attribute
        dicts]}`` (``TaskRoute.get_status``); this client sends the task's streams on
        its lane from now on, and large tensors through shared memory, if the task proved
        it can."""
        return status_dict(*self.route.get_status(timeout))

    def register_graph(self, graph_def: bytes, config: bytes = b"",
                       session_handle: str = "") -> str:
        request = pb.RegisterGraphRequest(graph_def=graph_def, config=config,
                                          session_handle=session_handle)
        return self.route.call("RegisterGraph", request).graph_handle

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
        tensors travel through shared memory both ways (``call_with_segments``; answers
        in a reused segment of ``reply_bytes`` if that is not 0, else a segment per
        tensor). ``RunResult.shm_bytes`` tells the size to offer next time."""
        early = self._ask_early(graph_handle, step_id, timeout)
        request = pb.RunGraphRequest(graph_handle=graph_handle, step_id=step_id,
                                     recv_key=list(fetch_names),
                                     options=_asking(options, tuple(early)))
        try:
            response, reply = self.route.call_with_segments("RunGraph", request, request.send,
                                                            feeds, reply_bytes, timeout)
            try:
                sent = {item.name: self._sent_value(item.tensor, reply, step_id, timeout,
                                                    early) for item in response.sent}
            finally:
                shm.give_back(reply)
            fetched = {item.name: self._sent_value(item.tensor, None, step_id, timeout, early)
                       for item in response.recv if item.tensor.header.stream_key}
        finally:
            for asked in early.values():    # not answered on the bulk port this time
                bulk.BulkClient.drop(asked)
        self._remember_streamed(graph_handle, response)
        fetched = {**wire.from_named(i for i in response.recv if i.name not in fetched),
                   **fetched} if fetched else wire.from_named(response.recv)
        return RunResult(fetched, response.metadata, sent, wire.reply_bytes(response.sent))

    def _ask_early(self, graph_handle: str, step_id: int,
                   timeout: float | None) -> dict[str, "bulk.Asked"]:
        """Ask the task's bulk port, before the RunGraph call, for the tensors that the last
        answer of ``graph_handle`` left there (stream key -> request): the task sends each
        as soon as its part computed it, while the answer travels (one round trip less);
        the call's options name them (``_asking``), so that they are left there again."""
        client = self.route.bulk
        port = client.port_of(self.address) if client is not None else 0
        early: dict[str, bulk.Asked] = {}
        for key in client.streamed(self.address, graph_handle) if port else ():
            try:
                early[key] = client.ask(self.address, port, step_id, key,
                                        300.0 if timeout is None else timeout)
            except (bulk.Unreachable, errors.OpError):
                break
        return early

    def _remember_streamed(self, graph_handle: str, response: pb.RunGraphResponse) -> None:
        """The answer's tensors left on the bulk port, ``bulk.MIN_BYTES`` or more, are asked
        for early at the next call (one that shrank goes inline again)."""
        if self.route.bulk is not None:
            self.route.bulk.streamed(self.address, graph_handle, tuple(
                item.tensor.header.stream_key for item in (*response.sent, *response.recv)
                if item.tensor.header.stream_key and item.tensor.header.bulk_port
                and item.tensor.header.nbytes >= bulk.MIN_BYTES))

    def _sent_value(self, proto: pb.TensorProto, reply: "shm.ReusedSegment | None",
                    step_id: int, timeout: float | None,
                    early: "dict[str, bulk.Asked] | None" = None) -> Any:
        """A value of a RunGraph answer's ``sent`` (or ``recv``): in the message or a segment
        (``wire.from_reply``), or, from a task on another host, left there under the
        header's ``stream_key`` and pulled (``_pull``; the answer of a request asked
        before the call, ``early``, where there is one)."""
        key = proto.header.stream_key
        if not key:
            return wire.from_reply(proto, reply)[0]
        asked = early.pop(key, None) if early else None
        if asked is not None:
            try:
                return self.route.bulk.take(asked)[0]
            except bulk.Unreachable:    # the task refused it unread: it is still there
                pass
        request = _recv_request(step_id, key, 300.0 if timeout is None else timeout, False)
        return self._pull(request, proto.header.bulk_port)[0]

    def cleanup_graph(self, step_id: int, timeout: float | None = None) -> None:
        self.route.call("CleanupGraph", pb.CleanupGraphRequest(step_id=step_id), timeout)

    def deregister_graph(self, graph_handle: str) -> None:
        self.route.call("DeregisterGraph", pb.DeregisterGraphRequest(graph_handle=graph_handle))

    def cleanup_all(self, containers: Sequence[str] = ()) -> None:
        self.route.call("CleanupAll", pb.CleanupAllRequest(container=list(containers)))

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
        use_shm = use_shm and self.route.shm_shared(wait=timeout)
        request = _recv_request(step_id, key, timeout, use_shm)
        segment = shm.reused_segment(reply_bytes) \
            if use_shm and reply_bytes >= shm.SEGMENT_MIN_BYTES else None
        if segment is not None:
            request.reply_shm, request.reply_shm_bytes = segment.name, segment.size
        return _RecvCall(self.route.future("RecvTensorInline", request, timeout + 30.0),
                         request, segment)

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
        use_shm = use_shm and self.route.shm_shared()
        return self._pull(_recv_request(step_id, reply.stream_key, timeout, use_shm),
                          reply.bulk_port)

    def bulk_port(self, nbytes: int) -> int:
        """The task's bulk port if a tensor of ``nbytes`` from it should be asked for
        there at once (``recv_bulk``): large enough, and the port is known; else 0."""
        known = self.route.bulk.port_of(self.address) if self.route.bulk else 0
        return known if nbytes >= bulk.MIN_BYTES else 0

    def recv_bulk(self, step_id: int, key: str, timeout: float,
                  port: int) -> Callable[[], tuple[Any, bool]]:
        """``recv_tensor`` on the task's bulk ``port``: the request leaves now, and the
        function returned waits for its answer (the task sends the tensor once it has it);
        through gRPC where that port turned out unreachable."""
        try:
            asked = self.route.bulk.ask(self.address, port, step_id, key, timeout)
        except bulk.Unreachable:
            return lambda: self.recv_tensor(step_id, key, timeout)
        except errors.OpError as err:
            return functools.partial(_raise, err)

        def answer() -> tuple[Any, bool]:
            try:
                return self.route.bulk.take(asked)
            except bulk.Unreachable:
                return self.recv_tensor(step_id, key, timeout)
        return answer

    def _pull(self, request: pb.RecvTensorRequest, bulk_port: int) -> tuple[Any, bool]:
        """``(array, is_dead)`` of a tensor the task left under ``request``'s key: from
        its bulk port when it names one and this client can reach it, else streamed."""
        if bulk_port and self.route.bulk is not None:
            self.route.bulk.learn(self.address, bulk_port)
            try:
                return self.route.bulk.fetch(self.address, bulk_port, request.step_id,
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
            call = _RecvCall(self.route.future("RecvTensorInline", call.request,
                                               timeout + 30.0), call.request, call.segment)

    def _recv_stream(self, request: pb.RecvTensorRequest) -> tuple[Any, bool]:
        responses = self.route.stream_raw(     # raw bytes: wire.assemble parses them
            RECV_TENSOR, request, pb.RecvTensorRequest.SerializeToString,
            request.timeout_s + 30.0)
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

    def __init__(self, route: "TaskRoute") -> None:
        super().__init__(route)
        self._reply_bytes: dict[tuple, int] = {}    # fetches -> reply segment size they need

    def create_session(self, graph_def: bytes, config: bytes = b"",
                       timeout: float | None = None) -> tuple[str, int]:
        """Return ``(session_handle, graph_version)``. The master's lane is used only if it
        proves that it shares this host (``TaskRoute.shm_shared``: a probe, sent while
        the session is made)."""
        self.route.shm_shared()
        response = self.route.call("CreateSession", pb.CreateSessionRequest(
            graph_def=graph_def, config=config, target=f"grpc://{self.address}"), timeout)
        shared = self.route.shm_shared(wait=True)
        self.route.learn_lane(response.lane, response.shm_host if shared else "")
        return response.session_handle, response.graph_version

    def extend_session(self, session_handle: str, graph_def: bytes,
                       current_graph_version: int, timeout: float | None = None) -> int:
        return self.route.call("ExtendSession", pb.ExtendSessionRequest(
            session_handle=session_handle, graph_def=graph_def,
            current_graph_version=current_graph_version), timeout).new_graph_version

    def run_step(self, session_handle: str, feeds: Mapping[str, Any] = {},
                 fetches: Sequence[str] = (), targets: Sequence[str] = (),
                 options: bytes = b"", timeout: float | None = None
                 ) -> tuple[dict[str, Any], bytes]:
        """Run one step; return ``(fetched tensors, metadata)``. Ctrl-C cancels the call,
        and the master then aborts the step on every task. A master that is a Server of
        this process runs it on this thread, with no RPC (``TaskRoute.in_process``, TF's
        LocalMaster), unless the call has a deadline. A master on this host (known
        from ``create_session``) gets large feeds through shared memory and answers
        large fetches so (``TaskRoute.call_with_segments``)."""
        engine = self.route.in_process(timeout)
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
        response, reply = self.route.call_with_segments("RunStep", request, request.feed,
                                                        feeds, self._reply_bytes.get(key, 0),
                                                        timeout)
        try:
            tensors = wire.from_answer(response.tensor, reply)
        finally:
            shm.give_back(reply)
        self._reply_bytes[key] = wire.reply_bytes(response.tensor)
        return tensors, response.metadata

    def close_session(self, session_handle: str, timeout: float | None = None) -> None:
        self.route.call("CloseSession", pb.CloseSessionRequest(session_handle=session_handle),
                        timeout)

    def list_devices(self, session_handle: str = "",
                     timeout: float | None = None) -> tuple[list[dict], list[dict]]:
        """``(local devices, remote devices)`` as attribute dicts."""
        response = self.route.call("ListDevices", pb.ListDevicesRequest(session_handle=session_handle),
                              timeout)
        return ([device_dict(d) for d in response.local_device],
                [device_dict(d) for d in response.remote_device])

    def reset(self, containers: Sequence[str] = (), device_filters: Sequence[str] = ()) -> None:
        self.route.call("Reset", pb.ResetRequest(container=list(containers),
                                            device_filters=list(device_filters)))


def _raise(error: BaseException) -> Any:
    raise error


@functools.lru_cache(maxsize=256)
def _asking(options: bytes, keys: tuple[str, ...]) -> bytes:
    """RunGraph ``options`` naming the stream ``keys`` asked for on the bulk port
    (``bulk_asked``: the task leaves those there whatever their size)."""
    if not keys:
        return options
    return json.dumps({**json.loads(options or b"{}"), "bulk_asked": list(keys)}).encode()


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


def status_dict(response: pb.GetStatusResponse, shm_proven: bool = True) -> dict[str, Any]:
    """A GetStatus answer as ``{"task", "pid", "last_step", "shm_host", "lane",
    "devices"}``; ``shm_host`` is "" unless the task proved it shares this host."""
    return {"task": response.task, "pid": response.pid, "last_step": response.last_step,
            "shm_host": response.shm_host if shm_proven else "", "lane": response.lane,
            "devices": [device_dict(d) for d in response.device_attributes]}
