"""Same host is proven, not guessed (``shm_probe``), on one host: a task reads back the
nonce of a client's probe segment only for a caller it takes as one of its host, and a
request whose segments it does not take is refused so that its client can resend it
inline, never DataLossError. (Across network namespaces: tests/multihost.)"""
from __future__ import annotations

import grpc
import pytest

from tfteach.distributed.transport import shm
from tfteach.distributed.transport import shm_probe
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc
from tfteach.distributed.protocol.status import error_from_rpc

from test_shm_security import other_process  # noqa: F401 (a fixture: a process's segment)

pytestmark = pytest.mark.skipif(not shm.available(), reason="needs a writable /dev/shm")


def _get_status(server, request: pb.GetStatusRequest) -> pb.GetStatusResponse:
    with grpc.insecure_channel(server.target[len("grpc://"):]) as channel:
        return pb_grpc.WorkerServiceStub(channel).GetStatus(request, timeout=30)


def test_a_task_of_this_host_reads_back_the_probe(make_server, client):
    server = make_server()
    probe = shm_probe.Probe()
    assert probe.proven(_get_status(server, probe.request()))
    assert client.route(server.target).shm_shared(wait=True)
    assert client.worker(server.target).get_status(timeout=30)["shm_host"] == shm.host_key()


def test_a_caller_claiming_another_host_proves_nothing(make_server):
    server = make_server()
    probe = shm_probe.Probe()
    request = probe.request()
    request.shm_host = "another-host/0/0"
    answer = _get_status(server, request)
    assert answer.shm_proof == b"" and not probe.proven(answer)


def test_a_probe_naming_another_processs_segment_proves_nothing(make_server,
                                                              other_process):  # noqa: F811
    server = make_server()
    _, name = other_process
    answer = _get_status(server, pb.GetStatusRequest(shm_host=shm.host_key(), shm_probe=name))
    assert answer.shm_proof == b""
    assert (shm.SHM_DIR / name).exists()        # neither read nor removed


def test_segments_from_a_caller_of_another_host_are_refused_for_an_inline_resend(
        make_server):
    server = make_server()
    request = pb.RunGraphRequest(graph_handle="none", step_id=1, shm_host="another-host/0/0")
    request.send.add(name="x").tensor.header.CopyFrom(pb.TensorHeader(
        dtype="|u1", shape=[1 << 16], nbytes=1 << 16,
        shm_name=f"{shm.PREFIX}1_1_{'0' * 2 * shm.RANDOM_BYTES}"))
    with grpc.insecure_channel(server.target[len("grpc://"):]) as channel:
        with pytest.raises(grpc.RpcError) as caught:
            pb_grpc.WorkerServiceStub(channel).RunGraph(request, timeout=30)
    error = error_from_rpc(caught.value)
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert shm_probe.refused(error), error
    assert "Refusing tensor 'x' in shared-memory segment" in error.message
