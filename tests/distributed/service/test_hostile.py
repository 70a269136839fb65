"""Hostile local callers: another user, or a same-uid process without the cluster token.

A name planted in /dev/shm, a port past 65535, a task out of file descriptors (idle
connections), a lane frame that announces far more bytes than it sends: none of them stops,
spins or bloats a task (in-process servers and LocalCluster tasks, loopback only)."""
from __future__ import annotations

import os
import resource
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dist_helpers import PROBE_ENGINE, as_user

from tfteach import errors
from tfteach.distributed.transport import lane
from tfteach.distributed.transport import lane_server
from tfteach.distributed.local import task_registry as registry
from tfteach.distributed.transport import shm
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.protocol.cluster_spec import ClusterSpec
from tfteach.distributed.local.local_cluster import LocalCluster
from tfteach.distributed.service.grpc_server import Server

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

TOKEN = "hostile-token"


def _plant(name: str, as_nobody: bool) -> Path:
    path = shm.SHM_DIR / name
    if as_nobody:
        subprocess.run(as_user(["/usr/bin/touch", str(path)]), check=True, timeout=30,
                       env={"PATH": "/usr/bin:/bin"})
    else:
        path.touch()
    return path


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _lane_name(pid: int) -> str:
    """The abstract socket name of the lane of process ``pid`` (from /proc/net/unix)."""
    for line in Path("/proc/net/unix").read_text().splitlines():
        path = line.split()[-1]
        if path.startswith(f"@tfteach-lane-{pid}-"):
            return path[1:]
    raise AssertionError(f"process {pid} has no lane")


@pytest.mark.skipif(not shm.available(), reason="needs /dev/shm")
def test_names_planted_in_dev_shm_stop_no_server_and_are_left_alone():
    """Files that tfteach did not make (pids no process can have, other users' files) are
    ignored by every sweep, whatever their numbers."""
    tag = secrets.token_hex(4)
    names = [(f"tfteach_9999999999_x{tag}", False), (f"tfteach_0_x{tag}", False),
             (f"tfteach_4194305_{tag}", False)]
    if os.geteuid() == 0:       # another user's files, one of them with a dead pid's name
        names += [(f"tfteach_9999999999_n{tag}", True), (f"tfteach_99999_n{tag}", True)]
    planted = [_plant(name, nobody) for name, nobody in names]
    try:
        if os.geteuid() == 0:
            assert not Path("/proc/99999").exists()
        assert not set(shm.sweep_dead()) & {path.name for path in planted}
        server = Server.create_local_server()
        server.stop()
        with LocalCluster(ps=0, workers=1, engine=PROBE_ENGINE) as cluster:
            assert cluster.alive("worker", 0)
        assert all(path.exists() for path in planted)
    finally:
        for path in planted:
            path.unlink(missing_ok=True)


@pytest.mark.parametrize("address", ["localhost:99999", "localhost:65536"])
def test_a_port_past_65535_is_invalid_argument_not_a_wrapped_port(address):
    """gRPC would bind the port modulo 65536 (99999 -> 34463). A ClusterSpec keeps the
    address as TF's does; the server refuses it."""
    assert ClusterSpec({"w": [address]}).task_address("w", 0) == address
    with pytest.raises(errors.InvalidArgumentError) as caught:
        Server({"w": [address]}, job_name="w", task_index=0, engine_factory=PROBE_ENGINE)
    assert "ports go from 0 to 65535" in caught.value.message
    assert "65535" in caught.value.hint


def test_the_server_cli_refuses_a_port_past_65535():
    done = subprocess.run([sys.executable, "-m", "tfteach.server", "--worker_hosts",
                           "localhost:99999", "--job", "worker", "--task", "0", "--engine",
                           PROBE_ENGINE], capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "ports go from 0 to 65535" in done.stderr


@pytest.mark.skipif(not Path("/proc/net/unix").exists() or not lane.enabled(),
                    reason="needs Linux /proc and lanes")
def test_a_task_out_of_descriptors_neither_exits_nor_spins():
    """Idle connections use up a task's descriptors: it must still see its owner alive
    (a /proc read failing with EMFILE is no death) and its lane must not spin on accept."""
    with LocalCluster(ps=0, workers=1, engine=PROBE_ENGINE) as cluster:
        pid = registry.task_pid(cluster._record("worker", 0))
        port = int(cluster.spec.task_address("worker", 0).rsplit(":", 1)[1])
        lane_name = _lane_name(pid)
        open_now = len(os.listdir(f"/proc/{pid}/fd"))
        old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (open_now + 4, old[1]))
        held = []
        try:
            for _ in range(12):         # idle TCP connections, more than the task can take
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            deadline = time.monotonic() + 10
            while len(os.listdir(f"/proc/{pid}/fd")) < open_now + 4 and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            for _ in range(4):          # and lane connections waiting to be accepted
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(5)
                sock.connect("\0" + lane_name)
                held.append(sock)
            time.sleep(0.5)
            before = _cpu_s(pid)
            time.sleep(2.0)             # the owner watch polls every 0.5 s
            assert cluster.alive("worker", 0), cluster.logs("worker", 0)
            spent = _cpu_s(pid) - before
            assert spent < 0.5, f"the task used {spent:.2f} s of CPU in 2 s while idle"
        finally:
            for sock in held:
                sock.close()
            if registry.task_pid(cluster._record("worker", 0)):
                resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
        client = ClusterClient(cluster.token)
        try:                            # and it serves again once descriptors are back
            assert client.worker(cluster.target("worker", 0)).get_status()["pid"] == pid
        finally:
            client.close()


@pytest.mark.skipif(not lane.enabled(), reason="lanes need Linux and /dev/shm")
def test_a_lane_frame_announcing_more_than_it_sends_costs_no_memory():
    """Four streams announce 200 MiB requests and send 1 KiB each: the task reads what
    arrives, it does not reserve what was announced."""
    server = Server({"local": ["localhost:0"]}, token=TOKEN, engine_factory=PROBE_ENGINE)
    client = ClusterClient(TOKEN)
    socks = []
    try:
        name = client.worker(server.target).get_status()["lane"]
        before = _rss_bytes(os.getpid())
        for _ in range(4):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(10)
            sock.connect("\0" + name)
            lane.send_frame(sock, lane.HELLO, b"RunGraphStream\0" + TOKEN.encode())
            sock.sendall(lane.HEADER.pack(lane.REQUEST, 200 << 20) + b"\0" * 1024)
            socks.append(sock)
        time.sleep(1.0)
        grown = _rss_bytes(os.getpid()) - before
        assert grown < 100 << 20, f"RSS grew by {grown >> 20} MiB"
    finally:
        for sock in socks:
            sock.close()
        client.close()
        server.stop()


@pytest.mark.skipif(not lane.enabled(), reason="lanes need Linux and /dev/shm")
def test_silent_lane_connections_never_lock_out_a_new_client():
    """More silent connections than the lane holds waiting for a hello: a new client's
    call is refused busy on the lane and goes through on gRPC."""
    import json

    import numpy as np

    server = Server({"local": ["localhost:0"]}, token=TOKEN, engine_factory=PROBE_ENGINE)
    setup, client = ClusterClient(TOKEN), ClusterClient(TOKEN)
    silent = []
    try:
        name = setup.worker(server.target).get_status()["lane"]
        handle = setup.worker(server.target).register_graph(json.dumps({"probe": "echo"})
                                                            .encode())
        for _ in range(lane_server.MAX_PENDING + 6):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(5)
            sock.connect("\0" + name)
            silent.append(sock)
        time.sleep(0.3)
        worker = client.worker(server.target)
        worker.get_status()         # learns the lane
        tensors, _ = worker.run_graph(handle, 3, {"x": np.float32(4.0)}, ["x"])
    finally:
        for sock in silent:
            sock.close()
        for each in (setup, client):
            each.close()
        server.stop()
    assert float(tensors["x"]) == 4.0


@pytest.mark.skipif(not lane.enabled(), reason="lanes need Linux and /dev/shm")
def test_a_lane_that_takes_no_connection_falls_back_to_grpc():
    """A lane whose backlog is full (a task out of descriptors rests its accept loop) makes
    a new client's connect wait: it gives up after ``CONNECT_TIMEOUT_S`` and uses gRPC."""
    import json

    import numpy as np

    server = Server({"local": ["localhost:0"]}, token=TOKEN, engine_factory=PROBE_ENGINE)
    client = ClusterClient(TOKEN)
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fillers = []
    try:
        name = f"tfteach-lane-stuck-{secrets.token_hex(4)}"
        stuck.bind("\0" + name)
        stuck.listen(0)                 # and never accepts
        while len(fillers) < 16:        # fill its backlog
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            fillers.append(sock)
            try:
                sock.connect("\0" + name)
            except BlockingIOError:
                break
        worker = client.worker(server.target)
        handle = worker.register_graph(json.dumps({"probe": "echo"}).encode())
        worker.route.learn_lane(name, shm.host_key())
        tensors, _ = worker.run_graph(handle, 3, {"x": np.float32(5.0)}, ["x"])
    finally:
        for sock in fillers + [stuck]:
            sock.close()
        client.close()
        server.stop()
    assert float(tensors["x"]) == 5.0


@pytest.mark.skipif(not lane.enabled(), reason="lanes need Linux and /dev/shm")
def test_a_stream_that_never_reads_its_answer_is_ended(monkeypatch):
    """A client that sends a request and never reads the (large) answer: the task gives up
    sending after ``SEND_TIMEOUT_S`` and frees the stream's thread."""
    import json

    import numpy as np

    from tfteach.distributed.transport import wire
    from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

    monkeypatch.setattr(lane_server, "SEND_TIMEOUT_S", 0.5)
    server = Server({"local": ["localhost:0"]}, token=TOKEN, engine_factory=PROBE_ENGINE)
    client = ClusterClient(TOKEN)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        worker = client.worker(server.target)
        name = worker.get_status()["lane"]
        handle = worker.register_graph(json.dumps({"probe": "echo"}).encode())
        # 1.6 MB back, in tensors under the size a task keeps for another host to pull
        keys = [f"x{i}" for i in range(8)]
        request = pb.RunGraphRequest(graph_handle=handle, step_id=1, recv_key=keys)
        wire.add_named(request.send, {k: np.ones(50_000, np.float32) for k in keys})
        sock.settimeout(5)
        sock.connect("\0" + name)
        lane.send_frame(sock, lane.HELLO, b"RunGraphStream\0" + TOKEN.encode())
        lane.send_frame(sock, lane.REQUEST, request.SerializeToString())
        deadline = time.monotonic() + 10
        while _stream_threads() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _stream_threads() == [], "the stream still waits to send its answer"
    finally:
        sock.close()
        client.close()
        server.stop()


def _stream_threads() -> list:
    import threading

    return [t for t in threading.enumerate() if t.name.startswith("tfteach-lane-Run")]
