"""RecvTensor moves tensors in chunks or through shared memory, and cleans up after itself."""

import grpc
import numpy as np
import pytest
from dist_helpers import PROBE_ENGINE, tfteach_segments

from tfteach import errors
from tfteach.distributed.transport import shm
from tfteach.distributed.engine.probe_engine import run_probe
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc

MiB = 1 << 20


@pytest.mark.parametrize("use_shm", [False, True], ids=["stream", "shm"])
def test_a_tensor_put_on_a_task_is_received_by_another(make_server, client, use_shm):
    server = make_server()
    value = np.random.default_rng(1).standard_normal((512, 1024)).astype(np.float32)  # 2 MiB
    before = tfteach_segments()
    server.engine.put_tensor(7, "edge_1_x", value)
    received, is_dead = client.worker(server.target).recv_tensor(7, "edge_1_x", timeout=10,
                                                                 use_shm=use_shm)
    np.testing.assert_array_equal(received, value)
    assert not is_dead
    assert tfteach_segments() == before


def test_shared_memory_is_used_only_for_a_receiver_on_this_host(make_server):
    server = make_server()
    stub = pb_grpc.WorkerServiceStub(grpc.insecure_channel(server.target[7:]))
    for step, host, expect_shm in [(1, shm.host_key(), True), (2, "other-host/x/1", False)]:
        server.engine.put_tensor(step, "k", np.zeros(2 * MiB, np.uint8))
        first = next(iter(stub.RecvTensor(pb.RecvTensorRequest(
            step_id=step, rendezvous_key="k", timeout_s=10, shm_host=host), timeout=10)))
        assert bool(first.header.shm_name) == expect_shm
        if expect_shm:
            shm.take(first.header.shm_name, first.header.nbytes,
                     memoryview(bytearray(first.header.nbytes)))


def test_small_tensors_never_use_shared_memory(make_server):
    server = make_server()
    stub = pb_grpc.WorkerServiceStub(grpc.insecure_channel(server.target[7:]))
    server.engine.put_tensor(1, "k", np.zeros(shm.THRESHOLD_BYTES - 1, np.uint8))
    messages = list(stub.RecvTensor(pb.RecvTensorRequest(
        step_id=1, rendezvous_key="k", timeout_s=10, shm_host=shm.host_key()), timeout=10))
    assert not messages[0].header.shm_name
    assert sum(len(m.chunk) for m in messages) == shm.THRESHOLD_BYTES - 1


def test_a_tensor_never_sent_times_out_with_a_hint(make_server, client):
    server = make_server()
    with pytest.raises(errors.DeadlineExceededError, match="'edge_9_y' of step 3") as info:
        client.worker(server.target).recv_tensor(3, "edge_9_y", timeout=0.3)
    assert "Hint:" in str(info.value)


def test_cleanup_graph_cancels_nothing_but_forgets_the_step(make_server, client):
    server = make_server()
    worker = client.worker(server.target)
    server.engine.put_tensor(4, "k", np.ones(3))
    worker.cleanup_graph(4)
    with pytest.raises(errors.DeadlineExceededError):
        worker.recv_tensor(4, "k", timeout=0.2)


@pytest.mark.cluster
@pytest.mark.timeout(60)
@pytest.mark.parametrize("use_shm", [True, False], ids=["shm", "stream"])
def test_worker_pulls_a_tensor_from_another_worker_process(cluster, use_shm):
    from tfteach.distributed.client.client import ClusterClient

    client = ClusterClient(cluster.token)
    try:
        producer = client.worker(cluster.target("worker", 0))
        consumer = client.worker(cluster.target("worker", 1))
        step = 100 + use_shm
        run_probe(producer, step, {"probe": "produce", "key": "t", "shape": [4, MiB // 4],
                                   "dtype": "float32", "value": 0.5})
        result = run_probe(consumer, step, {"probe": "fetch", "peer": producer.address,
                                            "key": "t", "shm": use_shm})
        assert int(result["nbytes"]) == 4 * MiB and float(result["sum"]) == 0.5 * MiB
    finally:
        client.close()


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("use_shm", [False, True], ids=["stream", "shm"])
def test_a_1_gib_tensor_crosses_between_processes(use_shm):
    from tfteach.distributed.client.client import ClusterClient
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=0, workers=2, engine=PROBE_ENGINE) as cluster:
        pids = _task_pids(cluster)
        client = ClusterClient(cluster.token)
        producer = client.worker(cluster.target("worker", 0))
        consumer = client.worker(cluster.target("worker", 1))
        run_probe(producer, 1, {"probe": "produce", "key": "big", "shape": [256, MiB],
                                "dtype": "float32", "value": 1.0})
        result = run_probe(consumer, 1, {"probe": "fetch", "peer": producer.address,
                                         "key": "big", "shm": use_shm, "timeout": 240})
        client.close()
        assert int(result["nbytes"]) == 1 << 30
        assert float(result["sum"]) == float(256 * MiB)
    assert not _segments_of(pids)


def _raw_first_message(cluster, step):
    """Start a RecvTensor from worker 0 and read only its first message (the shm handle)."""
    channel = grpc.insecure_channel(cluster.target("worker", 0)[7:])
    stub = pb_grpc.WorkerServiceStub(channel)
    call = stub.RecvTensor(pb.RecvTensorRequest(step_id=step, rendezvous_key="big",
                                                timeout_s=30, shm_host=shm.host_key()),
                           timeout=30, metadata=(("tfteach-token", cluster.token),))
    return channel, next(iter(call))


def _task_pids(cluster):
    from tfteach.distributed.local import task_registry as registry

    return {r["pid"] for r in registry.read_entry(cluster.id)["tasks"]}


def _segments_of(pids):
    return {name for name in tfteach_segments() if shm.owner_pid(name) in pids}


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_killing_the_sender_mid_transfer_leaves_no_shared_memory():
    from tfteach.distributed.client.client import ClusterClient
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=0, workers=1, engine=PROBE_ENGINE) as cluster:
        pids = _task_pids(cluster)
        client = ClusterClient(cluster.token)
        run_probe(client.worker(cluster.target("worker", 0)), 1,
                  {"probe": "produce", "key": "big", "shape": [16 * MiB], "dtype": "uint8"})
        channel, first = _raw_first_message(cluster, 1)
        assert (shm.SHM_DIR / first.header.shm_name).exists()     # mid-transfer
        cluster.kill("worker", 0)
        assert not (shm.SHM_DIR / first.header.shm_name).exists()
        assert not _segments_of(pids)
        channel.close()
        client.close()


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_a_receiver_that_never_takes_its_segment_leaves_nothing_after_close():
    from tfteach.distributed.client.client import ClusterClient
    from tfteach.distributed.local.local_cluster import LocalCluster

    cluster = LocalCluster(ps=0, workers=1, engine=PROBE_ENGINE)
    try:
        pids = _task_pids(cluster)
        client = ClusterClient(cluster.token)
        run_probe(client.worker(cluster.target("worker", 0)), 1,
                  {"probe": "produce", "key": "big", "shape": [16 * MiB], "dtype": "uint8"})
        channel, first = _raw_first_message(cluster, 1)     # and then "die": never take it
        channel.close()
        client.close()
        assert (shm.SHM_DIR / first.header.shm_name).exists()
    finally:
        cluster.close()
    assert not _segments_of(pids)


def _inline_call(server, step, host=""):
    stub = pb_grpc.WorkerServiceStub(grpc.insecure_channel(server.target[7:]))
    return stub.RecvTensorInline(pb.RecvTensorRequest(step_id=step, rendezvous_key="k",
                                                      timeout_s=10, shm_host=host), timeout=10)


def test_recv_tensor_inline_answers_a_small_tensor_with_its_bytes(make_server):
    server = make_server()
    server.engine.put_tensor(1, "k", np.arange(6, dtype=np.int32).reshape(2, 3))
    reply = _inline_call(server, 1, shm.host_key())
    assert not reply.stream_key and not reply.tensor.header.shm_name
    assert list(reply.tensor.header.shape) == [2, 3] and len(reply.tensor.content) == 24


def test_recv_tensor_inline_hands_a_large_tensor_over_in_shared_memory(make_server):
    server = make_server()
    server.engine.put_tensor(1, "k", np.ones(2 * MiB, np.uint8))
    reply = _inline_call(server, 1, shm.host_key())
    assert reply.tensor.header.shm_name and not reply.tensor.content
    buffer = bytearray(2 * MiB)
    shm.take(reply.tensor.header.shm_name, 2 * MiB, memoryview(buffer))
    assert buffer == b"\x01" * (2 * MiB)


def test_a_large_tensor_without_shared_memory_is_left_to_stream(make_server):
    """Too large to inline for another host: the answer names a key to stream it from."""
    server = make_server()
    value = np.arange(MiB // 2, dtype=np.float32)       # 2 MiB
    server.engine.put_tensor(1, "k", value)
    reply = _inline_call(server, 1, "other-host/x/1")
    assert reply.stream_key and not reply.HasField("tensor")
    stub = pb_grpc.WorkerServiceStub(grpc.insecure_channel(server.target[7:]))
    messages = list(stub.RecvTensor(pb.RecvTensorRequest(
        step_id=1, rendezvous_key=reply.stream_key, timeout_s=10), timeout=10))
    assert len(messages) > 1 and not messages[0].header.shm_name
    np.testing.assert_array_equal(np.frombuffer(b"".join(m.chunk for m in messages),
                                                np.float32), value)
