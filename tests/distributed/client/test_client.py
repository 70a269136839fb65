"""The master's wait for tasks, what a client sees when a task is missing or dies, and how a
route keeps its streams."""
import logging
import threading
import time

import numpy as np
import pytest

from tfteach import errors
from tfteach.distributed.transport.processes import free_ports
from tfteach.distributed.client.waiting import wait_for_task, wait_for_tasks

PS0 = "/job:ps/replica:0/task:0"


def test_waiting_for_a_missing_task_logs_and_then_names_it(client, caplog):
    caplog.set_level(logging.INFO, logger="tfteach.distributed")
    address = f"localhost:{free_ports(1)[0]}"
    with pytest.raises(errors.UnavailableError) as info:
        wait_for_tasks(client, [(PS0, address)], operation_timeout_in_ms=800,
                       log_period_s=0.2)
    assert f"CreateSession still waiting for response from worker: {PS0}" in caplog.text
    assert "Hint: is that task started? is the address right?" in caplog.text
    assert f"timed out after 800 ms: no response from worker: {PS0} ({address})" in \
        info.value.message
    assert "Is that task started?" in str(info.value)


def test_waiting_returns_as_soon_as_a_late_task_starts(make_server, client):
    port = free_ports(1)[0]
    timer = threading.Timer(0.3, make_server, ({"ps": [f"localhost:{port}"]},))
    timer.start()
    answers = wait_for_tasks(client, [(PS0, f"localhost:{port}")],
                             operation_timeout_in_ms=30000)
    timer.join()
    assert answers[PS0]["task"] == PS0


def test_wait_for_task_returns_the_status_of_a_live_task(make_server, client):
    server = make_server({"ps": ["localhost:0"]})
    assert wait_for_task(server.target, timeout=10, client=client)["devices"][0]["name"] == \
        f"{PS0}/device:CPU:0"


def test_wait_for_task_raises_naming_the_task(client):
    with pytest.raises(errors.UnavailableError, match="no response from worker: /job:w"):
        wait_for_task(f"localhost:{free_ports(1)[0]}", timeout=0.3, client=client,
                      task_name="/job:w/replica:0/task:3")


def test_a_wrong_token_is_not_waited_out(make_server, client):
    server = make_server({"ps": ["localhost:0"]}, token="right")
    with pytest.raises(errors.UnauthenticatedError):
        wait_for_tasks(client, [(PS0, server.target)], operation_timeout_in_ms=30000)


def test_typed_calls_move_tensors_both_ways(make_server, client):
    server = make_server()
    worker = client.worker(server.target)
    handle = worker.register_graph(b'{"probe": "echo"}')
    feeds = {"x": np.arange(6.0).reshape(2, 3), "s": np.array([b"a", b"bc"], dtype=object)}
    tensors, _ = worker.run_graph(handle, 4, feeds, ["x", "s"])
    np.testing.assert_array_equal(tensors["x"], feeds["x"])
    assert tensors["s"].tolist() == [b"a", b"bc"]
    assert worker.get_status()["last_step"] == 4
    worker.deregister_graph(handle)
    with pytest.raises(errors.AbortedError, match="Graph handle is not found"):
        worker.run_graph(handle, 5)


def test_master_calls_reach_the_engine(make_server, client):
    server = make_server()
    master = client.master(server.target)
    local, remote = master.list_devices()
    assert [d["name"] for d in local] == ["/job:local/replica:0/task:0/device:CPU:0"]
    assert remote == []
    with pytest.raises(errors.UnimplementedError, match="CreateSession") as info:
        master.create_session(b"graph")
    assert "Hint:" in str(info.value)


def test_a_call_that_found_nothing_listening_fails_at_once_and_reaches_a_later_server(
        make_server, client):
    port = free_ports(1)[0]
    worker = client.worker(f"localhost:{port}", PS0)
    with pytest.raises(errors.UnavailableError, match="Connection refused"):
        worker.get_status()
    time.sleep(2.0)     # the channel retries the port in the background, 1 s apart by now
    make_server({"ps": [f"localhost:{port}"]})
    assert worker.get_status()["task"] == PS0       # not "Connection refused" until then


@pytest.mark.cluster
@pytest.mark.timeout(60)
def test_a_task_dying_mid_call_is_unavailable_naming_it():
    from tfteach.distributed.local.local_cluster import LocalCluster

    with LocalCluster(ps=0, workers=1) as cluster:
        worker = cluster_client(cluster).worker(cluster.target("worker", 0),
                                                "/job:worker/replica:0/task:0")
        failures = []
        call = threading.Thread(target=lambda: failures.append(
            pytest.raises(errors.UnavailableError, worker.recv_tensor, 1, "never", 30)))
        call.start()
        worker.get_status(timeout=10)       # the channel is up; the recv is in flight
        cluster.kill("worker", 0)
        call.join(30)
        assert failures and "/job:worker/replica:0/task:0" in failures[0].value.message


def cluster_client(cluster):
    from tfteach.distributed.client.client import ClusterClient

    return ClusterClient(cluster.token)


# A learner's notebook: a master waited for a ps that was never started; later a server
# starts on that very port and a new session talks to it at once. The first master's channel
# still retries that port in the background, and gRPC shares connection attempts between
# channels to one address unless told not to, so the new session used to fail with
# "Connection refused" for up to a second after the server had started.
_PORT_TRIED_BEFORE = """
import socket, sys, time
import tfteach as tf

def free_port():
    with socket.socket() as s:
        s.bind(('localhost', 0))
        return s.getsockname()[1]

port = free_port()
spec = tf.train.ClusterSpec({'worker': [f'localhost:{free_port()}'], 'ps': [f'localhost:{port}']})
worker = tf.train.Server(spec, job_name='worker', task_index=0)
x = tf.constant([1.0]) * 3.0
try:
    tf.Session(worker.target, config=tf.ConfigProto(operation_timeout_in_ms=1000)).run(x)
except tf.errors.UnavailableError:
    print('no ps yet')
time.sleep(1.5)                 # the master's channel keeps retrying the ps's port
late = tf.train.Server(tf.train.ClusterSpec({'worker': [f'localhost:{port}']}),
                       job_name='worker', task_index=0)
tf.reset_default_graph()
print(tf.Session(late.target).run(tf.constant(21.0) * 2.0))
"""


@pytest.mark.timeout(60)
def test_a_server_on_a_port_tried_before_answers_a_new_session_at_once():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _PORT_TRIED_BEFORE], capture_output=True,
                          text=True, timeout=50)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["no", "ps", "yet", "42.0"]


def test_a_route_reuses_its_stream_and_closes_one_a_call_waits_on(make_server, client,
                                                                  monkeypatch):
    """Calls of one method to one task share a kept stream (noted as open once, when it is
    opened), and closing the client closes a stream even while a call waits on it: that
    call ends at once with an error instead of waiting for its task."""
    import json

    from tfteach.distributed.client import route
    from tfteach.distributed.transport import lane

    opened = []
    for cls in (lane.LaneStream, route.CallStream):
        def counting(self, *args, _real=cls.__init__, **kwargs):
            _real(self, *args, **kwargs)
            opened.append(type(self).__name__)
        monkeypatch.setattr(cls, "__init__", counting)
    server = make_server()
    worker = client.worker(server.target)
    worker.get_status(timeout=30)
    echo = worker.register_graph(b'{"probe": "echo"}')
    for step in range(3):
        assert worker.run_graph(echo, step, {"x": np.float32(step)}, ["x"])[0]["x"] == step
    assert len(opened) == 1
    address = server.target.split("//")[-1]
    waits = worker.register_graph(json.dumps({"probe": "fetch", "peer": address,
                                              "key": "never", "timeout": 8}).encode())
    outcome = []
    call = threading.Thread(target=lambda: outcome.append(
        pytest.raises(errors.OpError, worker.run_graph, waits, 9)))
    call.start()
    time.sleep(0.5)                 # the call waits on the kept stream
    started = time.monotonic()
    client.close()
    call.join(10)
    assert outcome and time.monotonic() - started < 4
    assert len(opened) == 1
