"""A worker's part of a step ends at once when the master that runs the step is killed
(kill -9), as in TF (the worker's RunGraph call is cancelled, and the worker aborts the
step): on a RunGraphStream over gRPC, on the lane, and on a unary RunGraph (a task that
refuses streams). The ps runs in this process, so the test sees its running steps and
rendezvous; the master is a real subprocess whose step waits on a queue of the ps. A step
from a new master then takes the element it enqueues, which the dead step would have
taken."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import tfteach as tf
from tfteach.distributed.engine.graph_engine import GraphEngine
from tfteach.distributed.protocol import limits
from tfteach.distributed.service.grpc_server import Server
from tfteach.distributed.transport import lane

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]

_MASTER = """
import json, sys
import tfteach as tf
from tfteach.distributed.service.grpc_server import Server

server = Server(json.loads(sys.argv[1]), job_name="worker", task_index=0)
with tf.device("/job:ps/task:0"):
    q = tf.FIFOQueue(-1, tf.float32, shapes=(), name="gone_q", shared_name="gone_q")
    take = q.dequeue()
with tf.device("/job:worker/task:0"):
    doubled = take * 2.0
with tf.Session(server.target) as sess:
    sess.run(doubled)
"""


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _serving_threads() -> list[str]:
    """The threads of this process still serving a call of the dead master: one in the
    engine's run_graph, or a lane stream's."""
    frames = sys._current_frames()
    return [t.name for t in threading.enumerate() if t.name.startswith("tfteach-lane-Run")
            or _in_run_graph(frames.get(t.ident))]


def _in_run_graph(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "run_graph" and "graph_engine" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def _start_master(spec: dict, lane_on: bool) -> subprocess.Popen:
    env = {**os.environ, "TFTEACH_LANE": "1" if lane_on else "0",
           "TFTEACH_VIRTUAL_GPUS": "0"}
    return subprocess.Popen([sys.executable, "-c", _MASTER, json.dumps(spec)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("way", ["stream", "lane", "unary"])
def test_a_killed_masters_step_ends_on_the_ps_at_once(monkeypatch, way):
    if way == "lane" and not lane.enabled():
        pytest.skip("lanes need Linux and /dev/shm")
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    if way == "unary":      # a ps that refuses every stream gets unary RunGraph calls
        monkeypatch.setattr(limits, "MAX_STREAMS", 0)
    spec = {"ps": [f"localhost:{_port()}"], "worker": [f"localhost:{_port()}"]}
    ps = Server(spec, job_name="ps", task_index=0, engine_factory=GraphEngine)
    master = _start_master(spec, lane_on=way == "lane")
    try:
        engine = ps.engine
        assert _until(lambda: engine.running_steps(), 30), "the master's step never began"
        assert _serving_threads()
        master.send_signal(signal.SIGKILL)
        master.wait(10)
        assert _until(lambda: not engine.running_steps(), 5), \
            f"the dead master's step still runs on the ps: {engine.running_steps()}"
        assert engine.rendezvous.pending() == []
        assert _until(lambda: not _serving_threads(), 5), _serving_threads()
        config = tf.ConfigProto(device_filters=["/job:ps"])
        with tf.Graph().as_default(), tf.device("/job:ps/task:0"):
            q = tf.FIFOQueue(-1, tf.float32, shapes=(), name="gone_q", shared_name="gone_q")
            with tf.Session(ps.target, config=config) as sess:
                sess.run(q.enqueue(tf.constant(5.0)))
                assert sess.run(q.dequeue(),
                                options=tf.RunOptions(timeout_in_ms=5000)) == 5.0
    finally:
        if master.poll() is None:
            master.kill()
            master.wait(10)
        ps.stop()
