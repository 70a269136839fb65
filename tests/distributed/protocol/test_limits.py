"""Callers without the token, idle sessions and pending waits cannot freeze a task: it keeps
answering a valid client's GetStatus, refuses unauthenticated calls without reading them,
and bounds its streams and waits (in-process servers on loopback)."""
import queue

import grpc
import numpy as np
import pytest

from tfteach import errors
from tfteach.distributed.protocol import limits
from tfteach.distributed.client.client import ClusterClient

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TOKEN = "limits-token"
RUN_GRAPH_STREAM = "/tfteach.cluster.WorkerService/RunGraphStream"
GET_STATUS_DEADLINE_S = 5.0     # a liveness check: a frozen task never answers


def _rss_bytes() -> int:
    import os

    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _stalled_calls(channel, count, first=b"\x00" * 1024):
    """``count`` calls that send their headers and one message, then never finish."""
    blocked = queue.Queue()
    method = channel.stream_stream(RUN_GRAPH_STREAM)

    def requests():
        yield first
        blocked.get()
    return [method(requests()) for _ in range(count)], blocked


def _answers_status(server, client=None):
    own = client is None
    client = client or ClusterClient(TOKEN)
    try:
        status = client.worker(server.target).get_status(timeout=GET_STATUS_DEADLINE_S)
        return status["task"] == "/job:local/replica:0/task:0"
    finally:
        if own:
            client.close()


@pytest.mark.timeout(60)
def test_200_stalled_calls_without_token_are_refused_and_the_task_keeps_answering(
        make_server):
    server = make_server(token=TOKEN)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    calls, blocked = _stalled_calls(channel, 200)
    try:
        assert _answers_status(server)
        codes = {call.code() for call in calls}
    finally:
        for _ in calls:
            blocked.put(None)
        channel.close()
    assert codes == {grpc.StatusCode.UNAUTHENTICATED}


@pytest.mark.timeout(60)
def test_a_1_gib_stream_without_token_is_refused_without_being_buffered(make_server):
    server = make_server(token=TOKEN)
    assert _answers_status(server)
    channel = grpc.insecure_channel(server.target[len("grpc://"):],
                                    options=[("grpc.max_send_message_length", -1)])
    chunk = b"\x01" * (1 << 20)
    before = _rss_bytes()
    try:
        call = channel.stream_stream(RUN_GRAPH_STREAM)(chunk for _ in range(1024))
        code = call.code()
    finally:
        channel.close()
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert _rss_bytes() - before < 50 << 20


def test_a_call_without_token_raises_unauthenticated_naming_the_token(make_server):
    server = make_server(token=TOKEN)
    client = ClusterClient("wrong-token")
    try:
        with pytest.raises(errors.UnauthenticatedError, match="token") as info:
            client.worker(server.target).register_graph(b"\x00" * (2 << 20))
    finally:
        client.close()
    assert "TFTEACH_CLUSTER_TOKEN" in info.value.hint


def test_a_message_over_the_cap_is_resource_exhausted_with_a_hint(make_server):
    server = make_server(token=TOKEN, max_message_bytes=1 << 20)
    client = ClusterClient(TOKEN)
    try:
        with pytest.raises(errors.ResourceExhaustedError) as info:
            client.worker(server.target).register_graph(b"\x00" * (2 << 20))
        assert _answers_status(server, client)
    finally:
        client.close()
    assert limits.MAX_MESSAGE_ENV in info.value.hint


def test_a_bad_max_message_bytes_setting_is_invalid_argument(monkeypatch):
    monkeypatch.setenv(limits.MAX_MESSAGE_ENV, "lots")
    with pytest.raises(errors.InvalidArgumentError, match=limits.MAX_MESSAGE_ENV):
        limits.max_message_bytes()


def _echo(worker, handle, step):
    tensors, _ = worker.run_graph(handle, step, {"x": np.arange(3)}, ["x"])
    return tensors["x"].tolist()


@pytest.mark.timeout(90)
def test_200_idle_sessions_leave_the_task_answering_and_can_run_again(make_server):
    server = make_server(token=TOKEN)
    clients = [ClusterClient(TOKEN) for _ in range(200)]
    try:
        workers = [client.worker(server.target) for client in clients]
        handle = workers[0].register_graph(b'{"probe": "echo"}')
        first = [_echo(worker, handle, 1) for worker in workers]     # streams left open
        assert _answers_status(server)
        again = [_echo(worker, handle, 2) for worker in workers]
    finally:
        for client in clients:
            client.close()
    assert first == again == [[0, 1, 2]] * 200


@pytest.mark.timeout(60)
def test_a_stream_beyond_the_limit_is_refused_as_busy(make_server, monkeypatch):
    monkeypatch.setattr(limits, "MAX_STREAMS", 2)
    server = make_server(token=TOKEN)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    blocked, ended = queue.Queue(), queue.Queue()
    method = channel.stream_stream(RUN_GRAPH_STREAM)
    calls = [method(iter(blocked.get, None), metadata=(("tfteach-token", TOKEN),))
             for _ in range(3)]
    for call in calls:
        call.add_done_callback(ended.put)
    try:
        first_to_end = ended.get(timeout=30)     # the two others stay open
        code, busy = first_to_end.code(), limits.is_busy(first_to_end)
    finally:
        for _ in calls:
            blocked.put(None)
        channel.close()
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and busy


@pytest.mark.timeout(60)
def test_a_stream_idle_past_the_limit_is_cancelled_by_the_task(make_server, monkeypatch):
    monkeypatch.setattr(limits, "STREAM_IDLE_S", 0.5)
    server = make_server(token=TOKEN)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    blocked = queue.Queue()
    call = channel.stream_stream(RUN_GRAPH_STREAM)(
        iter(blocked.get, None), metadata=(("tfteach-token", TOKEN),), timeout=30)
    try:
        code = call.code()
    finally:
        blocked.put(None)
        channel.close()
    assert code == grpc.StatusCode.CANCELLED


@pytest.mark.timeout(90)
def test_100_pending_waits_leave_the_task_answering_and_all_get_their_tensor(make_server):
    server = make_server(token=TOKEN)
    client = ClusterClient(TOKEN)
    try:
        worker = client.worker(server.target)
        calls = [worker.start_recv(7, f"k{i}", timeout=30) for i in range(100)]
        assert _answers_status(server, client)
        for i in range(100):
            server.engine.put_tensor(7, f"k{i}", np.array(i))
        values = [int(worker.recv_result(call, 7, timeout=30)[0]) for call in calls]
    finally:
        client.close()
    assert values == list(range(100))
