"""Every gRPC method of both services, fuzzed against a real graph engine: random bytes,
truncated valid messages, valid messages with random field values and hostile graphs, with
and without the cluster token. Every answer is a status other than INTERNAL or UNKNOWN, the
task keeps answering, logs no traceback, and stops cleanly (seeded; loopback only)."""
from __future__ import annotations

import json
import logging
import random

import grpc
import numpy as np
import pytest
from dist_helpers import all_methods
from hostile_graphs import base_graph, random_graph

from tfteach.distributed.protocol import tflog
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.engine.graph_engine import GraphEngine
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TOKEN = "fuzz-methods-token"
CASES = 200
SEED = 20240611
BAD_CODES = {grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN}
RECV_DEADLINE_S = 0.3
CALL_DEADLINE_S = 10.0
CPU = "/job:local/replica:0/task:0/device:CPU:0"


class _Known:
    """Values that reach deep into the engine: a live session and graph handle, a tensor
    waiting in the rendezvous."""

    def __init__(self, server) -> None:
        client = ClusterClient(TOKEN)
        try:
            master = client.master(server.target)
            self.session = master.create_session(json.dumps(base_graph()).encode(), b"")[0]
            worker = client.worker(server.target)
            self.graph = worker.register_graph(json.dumps(base_graph(CPU)).encode(), b"", "")
        finally:
            client.close()
        self.strings = ["", "\u2603" * 3, self.session, self.graph, "x:0", "y:0", "v",
                        "v/Assign", "nope:0", "x:9", "rendezvous-key", "shm-nope"]


def _value(field, rng: random.Random, known: _Known, depth: int):
    """A random value for one (non-repeated) field."""
    fd = field
    if fd.type == fd.TYPE_MESSAGE:
        return _message(fd.message_type, rng, known, depth + 1)
    if fd.type == fd.TYPE_STRING:
        if fd.name == "dtype":
            return rng.choice(["<f4", "<f8", "<c16", "|b1", "string", "<i8", "|O", "nope", ""])
        return rng.choice(known.strings)
    if fd.type == fd.TYPE_BYTES:
        return rng.choice([b"", rng.randbytes(rng.randrange(1, 64)), b"null", b"[]", b"{}",
                           b'{"trace": true, "timeout_s": -1}', b'{"timeout_in_ms": "x"}',
                           random_graph(rng), json.dumps(base_graph()).encode(),
                           json.dumps(base_graph(CPU)).encode(),
                           b'{"isolate": true, "targets": ["nope"]}', b'{"targets": 5}'])
    if fd.type == fd.TYPE_DOUBLE:
        return rng.choice([0.0, 0.001, 0.01, -1.0, float("nan"), float("inf"), 1e300])
    if fd.type == fd.TYPE_BOOL:
        return rng.random() < 0.5
    if fd.type in (fd.TYPE_FIXED64, fd.TYPE_UINT64):
        return rng.choice([0, 1, (1 << 64) - 1])
    if fd.type == fd.TYPE_INT32:
        return rng.choice([0, 1, -1, (1 << 31) - 1, -(1 << 31)])
    return rng.choice([0, 1, 4, -1, 12, (1 << 63) - 1, -(1 << 63), 1 << 40])


def _message(descriptor, rng: random.Random, known: _Known, depth: int = 0):
    """A message of type ``descriptor`` with random values in random fields."""
    message = getattr(pb, descriptor.name)() if descriptor.name in dir(pb) else None
    if message is None:         # a map entry: filled by its parent
        return None
    for field in descriptor.fields:
        if rng.random() < 0.3 or depth > 3:
            continue
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            getattr(message, field.name)[rng.choice([0, -1, 7])] = rng.choice(known.strings)
        elif field.is_repeated:
            for _ in range(rng.randrange(0, 4)):
                _append(message, field, rng, known, depth)
        elif field.type == field.TYPE_MESSAGE:
            getattr(message, field.name).CopyFrom(_value(field, rng, known, depth))
        else:
            setattr(message, field.name, _value(field, rng, known, depth))
    return message


def _append(message, field, rng: random.Random, known: _Known, depth: int) -> None:
    items = getattr(message, field.name)
    if field.type == field.TYPE_MESSAGE:
        items.add().CopyFrom(_value(field, rng, known, depth))
    else:
        items.append(_value(field, rng, known, depth))


def _tensor_content(message) -> None:
    """Make the tensors of ``message`` (if any) consistent with their headers half the time,
    so feeds get past decoding to the engine's checks."""
    for name in ("feed", "send"):
        for item in getattr(message, name, []):
            header = item.tensor.header
            header.shm_name = ""
            dtype = np.dtype(header.dtype) if header.dtype in ("<f4", "<f8", "<c16", "<i8") \
                else np.dtype("<f4")
            header.dtype = dtype.str
            shape = [d % 4 for d in header.shape][:3]
            header.ClearField("shape")
            header.shape.extend(shape)
            header.nbytes = int(np.prod(shape)) * dtype.itemsize
            item.tensor.content = bytes(header.nbytes)


def _cases(method, rng: random.Random, known: _Known) -> list[list[bytes]]:
    """CASES request streams (one message each, several for a client stream)."""
    request = method.input_type
    cases = []
    for i in range(CASES):
        kind = i % 4
        message = _message(request, rng, known)
        if kind == 3 and rng.random() < 0.5:
            _tensor_content(message)
        data = message.SerializeToString()
        if kind == 0:
            data = rng.randbytes(rng.choice([1, 3, 17, 200, 4096]))
        elif kind == 1 and data:
            data = data[:rng.randrange(len(data))]
        elif kind == 2 and data:
            cut = rng.randrange(len(data))
            data = data[:cut] + rng.randbytes(rng.randrange(1, 9)) + data[cut:]
        cases.append([data] * (rng.randrange(1, 4) if method.client_streaming else 1))
    return cases


def _call(channel, method, service, stream: list[bytes], metadata) -> grpc.StatusCode:
    """Send one raw request (or stream of them); the status it ended with."""
    path = f"/{service.full_name}/{method.name}"
    deadline = RECV_DEADLINE_S if method.name.startswith("RecvTensor") else CALL_DEADLINE_S
    kind = {(False, False): channel.unary_unary, (False, True): channel.unary_stream,
            (True, True): channel.stream_stream}[(method.client_streaming,
                                                   method.server_streaming)]
    try:
        if method.client_streaming:
            list(kind(path)(iter(stream), timeout=deadline, metadata=metadata))
        elif method.server_streaming:
            list(kind(path)(stream[0], timeout=deadline, metadata=metadata))
        else:
            kind(path)(stream[0], timeout=deadline, metadata=metadata)
    except grpc.RpcError as err:
        return err.code()
    return grpc.StatusCode.OK


def _methods():
    return [(service, method) for service in pb.DESCRIPTOR.services_by_name.values()
            for method in service.methods]


class _Tracebacks(logging.Handler):
    """Records of the task's log that carry a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or "Traceback" in record.getMessage():
            self.records.append(record)


@pytest.fixture
def fuzzed_server(make_server, monkeypatch, capfd):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    handler = _Tracebacks()
    tflog.logger.addHandler(handler)
    try:
        server = make_server(token=TOKEN, engine_factory=GraphEngine)
        server.start()
        yield server, handler
    finally:
        tflog.logger.removeHandler(handler)


def _still_answers(server) -> None:
    client = ClusterClient(TOKEN)
    try:
        assert client.worker(server.target).get_status(timeout=10)["task"]
    finally:
        client.close()


@pytest.mark.timeout(240)
def test_every_method_answers_fuzz_with_a_client_error_and_keeps_serving(fuzzed_server,
                                                                         capfd):
    server, tracebacks = fuzzed_server
    known = _Known(server)
    server.engine.put_tensor(5, "rendezvous-key", np.arange(3.0))
    rng = random.Random(SEED)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    counts, bad = {}, []
    try:
        for service, method in _methods():
            for stream in _cases(method, rng, known):
                for metadata in ((("tfteach-token", TOKEN),), ()):
                    code = _call(channel, method, service, stream, metadata)
                    if code in BAD_CODES or (not metadata and
                                             code != grpc.StatusCode.UNAUTHENTICATED):
                        bad.append((method.name, bool(metadata), code, stream[0][:80]))
                    counts[method.name] = counts.get(method.name, 0) + 1
            _still_answers(server)
    finally:
        channel.close()
    print({name: n // 2 for name, n in counts.items()})
    assert not bad, bad[:20]
    assert len(counts) == len(all_methods())
    assert min(counts.values()) >= 2 * CASES
    assert not tracebacks.records, tracebacks.records[0].getMessage()
    assert "Traceback" not in capfd.readouterr().err
    server.stop()
    with pytest.raises(Exception):
        ClusterClient(TOKEN).worker(server.target).get_status(timeout=2)
