"""A RunStep whose client went away is not run: the step of a request that a stream read
just before its client was killed (or cancelled it) never starts, so it cannot take the
queue element another client enqueues next (TF cancels a step whose master call was
cancelled). The moment is held open on a real in-process server, on gRPC and on the lane;
a unary RunStep whose client goes away while its step waits is aborted too."""
from __future__ import annotations

import queue
import threading

import grpc
import pytest

import tfteach as tf
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.client.stubs import WorkerClient
from tfteach.distributed.engine.graph_engine import GraphEngine
from tfteach.distributed.protocol import limits
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc
from tfteach.distributed.service.servicers import MasterServicer
from tfteach.distributed.transport import lane
from tfteach.ops.data_flow_ops import FIFOQueue

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


class _HeldStream:
    """Holds the first RunStep request a stream reads (after reading it, before its step
    has a cancellation) until the stream has ended; ``ended`` is set once the stream's
    handler has returned."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read, self.ended = threading.Event(), threading.Event()
        mark, serve = limits.StreamSlots._mark, MasterServicer.RunStepStream

        def held_mark(slots, context, idle_since):
            mark(slots, context, idle_since)
            if idle_since is None and not self.read.is_set():
                self.read.set()
                for _ in range(1000):       # at most 10 s
                    if not context.is_active():
                        break
                    threading.Event().wait(0.01)

        def noted_serve(servicer, requests, context):
            try:
                yield from serve(servicer, requests, context)
            finally:
                self.ended.set()
        monkeypatch.setattr(limits.StreamSlots, "_mark", held_mark)
        monkeypatch.setattr(MasterServicer, "RunStepStream", noted_serve)


def _send_and_leave_on_grpc(server, request: pb.RunStepRequest, held: _HeldStream) -> None:
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    requests: queue.SimpleQueue = queue.SimpleQueue()
    call = pb_grpc.MasterServiceStub(channel).RunStepStream(iter(requests.get, None))
    requests.put(request)
    assert held.read.wait(20)
    call.cancel()
    channel.close()


def _send_and_leave_on_lane(server, request: pb.RunStepRequest, held: _HeldStream) -> None:
    client = ClusterClient()
    try:
        name = client.worker(server.target).get_status()["lane"]
    finally:
        client.close()
    stream = lane.LaneStream(name, "RunStepStream", None, pb.RunStepResponse)
    calling = threading.Thread(target=_quietly, args=(stream.call, request), daemon=True)
    calling.start()
    assert held.read.wait(20)
    stream.close()
    calling.join(20)


def _quietly(call, request) -> None:
    try:
        call(request)
    except Exception:  # noqa: BLE001 (the stream was closed under it)
        pass


@pytest.mark.parametrize("leave", [_send_and_leave_on_grpc, _send_and_leave_on_lane],
                         ids=["grpc", "lane"])
def test_a_step_read_as_its_client_went_away_never_runs(make_server, monkeypatch, leave):
    if leave is _send_and_leave_on_lane and not lane.enabled():
        pytest.skip("lanes need Linux and /dev/shm")
    held = _HeldStream(monkeypatch)
    server = make_server(engine_factory=GraphEngine)
    q = FIFOQueue(-1, tf.float32, shapes=(), name="gone_q", shared_name="gone_q")
    take = q.dequeue() * 2.0
    with tf.Session(server.target) as sess:
        sess.run(q.enqueue(tf.constant(5.0)))
        leave(server, pb.RunStepRequest(session_handle=sess._handle, fetch=[take.name]), held)
        assert held.ended.wait(20)
        assert sess.run(q.size()) == 1      # the element is still there for the next step
        assert sess.run(take) == 10.0


def test_a_unary_step_whose_client_went_away_is_aborted(make_server, monkeypatch):
    """The same on a unary RunStep (a client refused a stream sends its steps so): the step
    waits on the queue when its client cancels the call, and it ends taking nothing."""
    started, ended = threading.Event(), threading.Event()
    run_step, serve = MasterServicer._run_step, MasterServicer.RunStep

    def noted_run_step(servicer, *args):
        started.set()
        return run_step(servicer, *args)

    def noted_serve(servicer, request, context):
        try:
            return serve(servicer, request, context)
        finally:
            ended.set()
    monkeypatch.setattr(MasterServicer, "_run_step", noted_run_step)
    monkeypatch.setattr(MasterServicer, "RunStep", noted_serve)
    server = make_server(engine_factory=GraphEngine)
    q = FIFOQueue(-1, tf.float32, shapes=(), name="gone_q", shared_name="gone_q")
    take = q.dequeue() * 2.0
    with tf.Session(server.target) as sess, \
            grpc.insecure_channel(server.target[len("grpc://"):]) as channel:
        sess.run(q.size())
        call = pb_grpc.MasterServiceStub(channel).RunStep.future(
            pb.RunStepRequest(session_handle=sess._handle, fetch=[take.name]))
        assert started.wait(20)
        call.cancel()
        assert ended.wait(20)
        sess.run(q.enqueue(tf.constant(5.0)))
        assert sess.run(q.size()) == 1


def test_a_slow_abort_reaches_the_ps_before_the_next_steps_part(engine_cluster, monkeypatch):
    """A client goes away while its step waits on the ps, and the abort's call to the ps is
    slow (a starved thread, a busy channel): the master sends the ps nothing of a later step
    until that abort has ended there, so the dead step cannot take the element enqueued
    next."""
    entered, aborting = threading.Event(), threading.Event()
    cleanup, run_graph = WorkerClient.cleanup_graph, GraphEngine.run_graph

    def slow_cleanup(worker, step_id, timeout=None):
        aborting.set()
        threading.Event().wait(0.5)
        return cleanup(worker, step_id, timeout)

    def noted_run_graph(engine, handle, step_id, feeds, fetches, options):
        if "mul:0" in fetches:
            entered.set()
        return run_graph(engine, handle, step_id, feeds, fetches, options)
    monkeypatch.setattr(WorkerClient, "cleanup_graph", slow_cleanup)
    monkeypatch.setattr(GraphEngine, "run_graph", noted_run_graph)
    with tf.device("/job:ps/task:0"):
        q = FIFOQueue(-1, tf.float32, shapes=(), name="slow_q", shared_name="slow_q")
        take, put = q.dequeue() * 2.0, q.enqueue(tf.constant(5.0))
    master = engine_cluster["worker", 0]
    with tf.Session(master.target) as sess, \
            grpc.insecure_channel(master.target[len("grpc://"):]) as channel:
        sess.run(q.size())
        requests: queue.SimpleQueue = queue.SimpleQueue()
        call = pb_grpc.MasterServiceStub(channel).RunStepStream(iter(requests.get, None))
        requests.put(pb.RunStepRequest(session_handle=sess._handle, fetch=[take.name]))
        assert entered.wait(20)
        call.cancel()
        assert aborting.wait(20)
        sess.run(put)
        assert sess.run(take, options=tf.RunOptions(timeout_in_ms=5000)) == 10.0
