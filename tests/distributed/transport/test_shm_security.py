"""A server maps only the calling process's own segments, never a link or another user's
file, decides "same host" itself, and reclaims the segments of a caller that was killed."""
from __future__ import annotations

import os
import pathlib
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import grpc
import numpy as np
import pytest
from dist_helpers import NOBODY, as_user

from tfteach import errors
from tfteach.distributed.service import servicers as services
from tfteach.distributed.transport import shm
from tfteach.distributed.transport import shm_callers
from tfteach.distributed.transport import wire
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc
from tfteach.distributed.protocol.status import error_from_rpc

NBYTES = shm.SEGMENT_MIN_BYTES


def _name(pid: int) -> str:
    return f"{shm.PREFIX}{pid}_1_{secrets.token_hex(shm.RANDOM_BYTES)}"


def _run_graph(server, feed_segment: str = "", reply_segment: str = "") -> None:
    """A RunGraph whose feed is ``NBYTES`` in ``feed_segment`` and which offers
    ``reply_segment``, sent from this process; raises the tfteach error it gets."""
    request = pb.RunGraphRequest(graph_handle="none", step_id=1, shm_host=shm.host_key(),
                                 reply_shm=reply_segment, reply_shm_bytes=NBYTES)
    if feed_segment:
        header = pb.TensorHeader(dtype="|u1", shape=[NBYTES], nbytes=NBYTES,
                                 shm_name=feed_segment)
        request.send.add(name="x").tensor.header.CopyFrom(header)
    with grpc.insecure_channel(server.target[len("grpc://"):]) as channel:
        try:
            pb_grpc.WorkerServiceStub(channel).RunGraph(request, timeout=30)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from None


@pytest.fixture
def other_process():
    """A live process of this uid that made a reused segment holding b"secret"."""
    code = ("import time; from tfteach.distributed.transport import shm; "
            "s = shm.reused_segment(1 << 20); s.view[:6] = b'secret'; "
            "print(s.name, flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        yield proc, proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()
        shm.sweep_dead()


@pytest.fixture
def link_outside(tmp_path):
    """A symbolic link in /dev/shm, named as a segment of this process, to a file outside."""
    target = tmp_path / "victim"
    target.write_bytes(b"x" * NBYTES)
    name = _name(os.getpid())
    os.symlink(target, shm.SHM_DIR / name)
    yield name, target
    os.unlink(shm.SHM_DIR / name)


def test_mapping_a_symbolic_link_is_refused_and_its_target_left_unchanged(link_outside):
    name, target = link_outside
    with pytest.raises(errors.PermissionDeniedError, match=name):
        shm.mapped(name, NBYTES, os.getpid())
    assert target.read_bytes() == b"x" * NBYTES


def test_taking_a_symbolic_link_is_refused(link_outside):
    name, _ = link_outside
    with pytest.raises(errors.PermissionDeniedError, match=name):
        shm.take(name, NBYTES, memoryview(bytearray(NBYTES)))


@pytest.mark.cluster
def test_a_server_refuses_a_feed_in_a_symbolic_link(make_server, link_outside):
    name, target = link_outside
    with pytest.raises(errors.PermissionDeniedError, match=name):
        _run_graph(make_server(), feed_segment=name)
    assert target.read_bytes() == b"x" * NBYTES


@pytest.mark.cluster
def test_a_server_refuses_a_feed_in_another_processs_segment(make_server, other_process):
    _, name = other_process
    with pytest.raises(errors.PermissionDeniedError, match=name):
        _run_graph(make_server(), feed_segment=name)


@pytest.mark.cluster
def test_a_server_refuses_another_processs_segment_as_reply_and_leaves_it(make_server,
                                                                           other_process):
    _, name = other_process
    with pytest.raises(errors.PermissionDeniedError, match=name):
        _run_graph(make_server(), reply_segment=name)
    assert (shm.SHM_DIR / name).read_bytes()[:6] == b"secret"


def test_a_host_claim_from_a_remote_connection_maps_nothing(monkeypatch):
    """A caller that sends this host's key from another host's address gets no shared
    memory: its segment names are refused before anything is opened."""
    opened = []
    monkeypatch.setattr(shm, "mapped", lambda *args: opened.append(args))
    caller = shm_callers.Caller("ipv4:203.0.113.7:40000")
    request = pb.RunGraphRequest(shm_host=shm.host_key(), reply_shm=_name(os.getpid()))
    request.send.add(name="x").tensor.header.CopyFrom(pb.TensorHeader(
        dtype="|u1", shape=[NBYTES], nbytes=NBYTES, shm_name=_name(os.getpid())))
    assert services._sender(request, caller) is None
    with pytest.raises(errors.DataLossError, match="another host"):
        wire.from_named(request.send, services._sender(request, caller))
    assert opened == []


def test_a_caller_cannot_name_the_segment_of_a_pid_that_does_not_hold_its_connection(
        other_process):
    proc, name = other_process
    caller = shm_callers.Caller("ipv4:127.0.0.1:1")     # no connection of that process's
    assert caller.shares_host(shm.host_key())
    with pytest.raises(errors.PermissionDeniedError, match=name):
        caller.owner_of(name)


@pytest.fixture
def planted_by_another_uid():
    """A file named as a segment of this process, mode 0600, owned by another uid."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another uid")
    name = _name(os.getpid())
    path = shm.SHM_DIR / name
    path.write_bytes(b"y" * NBYTES)
    os.chmod(path, 0o600)
    os.chown(path, NOBODY, NOBODY)
    yield name
    path.unlink()


def test_a_segment_owned_by_another_uid_is_refused(planted_by_another_uid):
    with pytest.raises(errors.PermissionDeniedError, match="owned by uid"):
        shm.mapped(planted_by_another_uid, NBYTES, os.getpid())


@pytest.mark.cluster
def test_a_client_of_another_uid_gets_no_segment_mapped(make_server):
    """A client running as another user that sends a segment of its own is refused."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run a client as another uid")
    server = make_server()
    code = ("import sys, grpc; from tfteach.distributed.transport import shm; "
            "from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb, "
            "tfteach_cluster_pb2_grpc as pb_grpc\n"
            "s = shm.reused_segment(1 << 20)\n"
            "r = pb.RunGraphRequest(graph_handle='none', shm_host=shm.host_key())\n"
            f"r.send.add(name='x').tensor.header.CopyFrom(pb.TensorHeader(dtype='|u1', "
            f"shape=[{NBYTES}], nbytes={NBYTES}, shm_name=s.name))\n"
            "try:\n"
            "    pb_grpc.WorkerServiceStub(grpc.insecure_channel(sys.argv[1])).RunGraph(r)\n"
            "except grpc.RpcError as err:\n"
            "    print(err.code().name, err.details())\n")
    try:
        done = subprocess.run(as_user([sys.executable, "-c", code,
                                       server.target[len("grpc://"):]]),
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "HOME": "/tmp"})
    except PermissionError:
        pytest.skip("this Python cannot run as another uid (its home is private)")
    if any(sign in done.stderr for sign in
           ("ModuleNotFoundError", "PermissionError", "Permission denied")):
        pytest.skip("tfteach cannot be imported as another uid here")
    assert done.stdout.startswith("PERMISSION_DENIED"), done.stdout + done.stderr


CLIENT = """
import pathlib, sys, time, numpy as np, tfteach as tf
from tfteach.distributed.transport import shm
shm.SHM_DIR = pathlib.Path(sys.argv[2])
x = tf.placeholder(tf.float32, [1 << 18])
y = x * 2.0
sess = tf.Session(sys.argv[1])
for _ in range(3):
    sess.run(y, {x: np.ones(1 << 18, np.float32)})
print(sum(shm.owner_pid(n) == shm.os.getpid() for n in shm.list_segments()), flush=True)
time.sleep(120)
"""


@pytest.mark.cluster
def test_a_killed_clients_segments_are_reclaimed_while_its_server_runs(make_server,
                                                                      monkeypatch):
    """Its server reclaims them (in a folder of this test's, which no other process's
    sweep of /dev/shm touches)."""
    from tfteach.distributed.engine.graph_engine import GraphEngine

    private = tempfile.mkdtemp(dir=shm.SHM_DIR, prefix="test_reclaim_")
    monkeypatch.setattr(shm, "SHM_DIR", pathlib.Path(private))
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    server = make_server(engine_factory=GraphEngine)
    proc = subprocess.Popen([sys.executable, "-c", CLIENT, server.target, private],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert int(proc.stdout.readline()) > 0      # it made reused segments
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 3 * shm_callers.REAP_WAIT_S
        while _segments_of(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _segments_of(proc.pid) == []
    finally:
        proc.kill()
        proc.wait()
        server.stop()
        shutil.rmtree(private, ignore_errors=True)


def _segments_of(pid: int) -> list[str]:
    return [name for name in shm.list_segments() if shm.owner_pid(name) == pid]
