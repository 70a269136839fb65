"""Malformed, oversized and random requests to every method get a gRPC error, and the
server keeps answering (bounded loops, loopback only)."""
import random

import grpc
import numpy as np
import pytest
from dist_helpers import all_methods

from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

TOKEN = "fuzz-token"
METADATA = (("tfteach-token", TOKEN),)
ROUNDS = 12


def _payloads(rng: random.Random):
    """Random bytes of many sizes, truncated/garbled real messages, and one oversized blob."""
    header = pb.TensorHeader(dtype="<f4", shape=[1 << 30, 1 << 30], nbytes=4)
    real = [pb.RunGraphRequest(graph_handle="h", step_id=1, send=[pb.NamedTensor(
                name="x", tensor=pb.TensorProto(header=header, content=b"abcd"))]),
            pb.RecvTensorRequest(step_id=-1, rendezvous_key="\x00" * 50, timeout_s=float("nan"),
                                 shm_host="h"),
            pb.RegisterGraphRequest(graph_def=b'{"probe": "produce", "shape": "x"}'),
            pb.RunStepRequest(session_handle="s", feed=[pb.NamedTensor(name="f")])]
    for _ in range(ROUNDS):
        yield rng.randbytes(rng.choice([1, 7, 64, 1000, 65536]))
        message = rng.choice(real).SerializeToString()
        yield message[:rng.randrange(1, len(message))]
        cut = rng.randrange(len(message))
        yield message[:cut] + rng.randbytes(8) + message[cut:]
    yield rng.randbytes(8 << 20)     # above gRPC's default 4 MB cap, below ours (unlimited)


def _call(channel, path, streaming, payload):
    """Send raw bytes; return the gRPC status code (OK if the server answered)."""
    method = (channel.unary_stream if streaming else channel.unary_unary)(path)
    try:
        answer = method(payload, timeout=0.5 if streaming else 5, metadata=METADATA)
        if streaming:
            list(answer)
    except grpc.RpcError as err:
        return err.code()
    return grpc.StatusCode.OK


@pytest.mark.timeout(120)
def test_garbage_to_every_method_gets_an_error_and_the_server_survives(make_server):
    server = make_server(token=TOKEN)
    channel = grpc.insecure_channel(server.target[len("grpc://"):],
                                    options=[("grpc.max_send_message_length", -1)])
    rng = random.Random(1234)
    codes = {}
    try:
        for path, streaming in all_methods():
            for payload in _payloads(rng):
                code = _call(channel, path, streaming, payload)
                codes.setdefault(path, set()).add(code)
    finally:
        channel.close()
    for path, seen in codes.items():
        assert seen - {grpc.StatusCode.OK}, f"{path} accepted every garbage payload"
    assert grpc.StatusCode.UNAVAILABLE not in set().union(*codes.values())
    _server_still_works(server)


def _server_still_works(server):
    client = ClusterClient(TOKEN)
    try:
        worker = client.worker(server.target)
        assert worker.get_status(timeout=10)["task"] == "/job:local/replica:0/task:0"
        server.engine.put_tensor(99, "after-fuzz", np.arange(5))
        value, _ = worker.recv_tensor(99, "after-fuzz", timeout=10)
        assert value.tolist() == [0, 1, 2, 3, 4]
    finally:
        client.close()


@pytest.mark.timeout(60)
def test_unauthenticated_garbage_is_refused_before_parsing(make_server):
    server = make_server(token=TOKEN)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    rng = random.Random(99)
    try:
        for path, streaming in all_methods():
            method = (channel.unary_stream if streaming else channel.unary_unary)(path)
            with pytest.raises(grpc.RpcError) as info:
                answer = method(rng.randbytes(256), timeout=5)
                list(answer) if streaming else None
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        channel.close()
    _server_still_works(server)


@pytest.mark.timeout(60)
def test_unknown_methods_are_unimplemented(make_server):
    server = make_server(token=TOKEN)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    try:
        with pytest.raises(grpc.RpcError) as info:
            channel.unary_unary("/tfteach.cluster.WorkerService/Nope")(b"x", timeout=5,
                                                                        metadata=METADATA)
        assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        channel.close()
