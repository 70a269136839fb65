"""A session whose master is a Server of this process runs its steps without RunStep calls
(``local_master``, TF's LocalMaster)."""
import numpy as np
import pytest

import tfteach as tf
from dist_helpers import ctrl_c_after
from tfteach.distributed.client import in_process_master as local_master
from tfteach.distributed.service import servicers as services

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


@pytest.fixture
def runstep_calls(monkeypatch):
    """The RunStep requests any servicer of this process serves."""
    calls = []
    real = services.MasterServicer._run_step
    monkeypatch.setattr(services.MasterServicer, "_run_step", lambda self, request, *rest: (
        calls.append(request.session_handle) or real(self, request, *rest)))
    return calls


def test_steps_on_a_server_of_this_process_make_no_runstep_call(engine_cluster, runstep_calls):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
    with tf.device("/job:worker/task:1"):
        x = tf.placeholder(tf.float32, [4])
        total = tf.reduce_sum(v * x)
    with tf.Session(engine_cluster["worker", 0].target) as sess:
        sess.run(v.initializer)
        assert sess.run(total, {x: np.full(4, 2.0, np.float32)}) == 12.0
    assert runstep_calls == []


def test_the_route_finds_the_server_of_this_process_once_not_per_step(engine_cluster,
                                                                     runstep_calls,
                                                                     monkeypatch):
    """Whether the master is a server of this process is decided once per connection
    (the route keeps it), not looked up again for every step."""
    looked_up = []
    real = local_master._key
    monkeypatch.setattr(local_master, "_key", lambda address: looked_up.append(address) or
                        real(address))
    with tf.device("/job:worker/task:0"):
        c = tf.constant(3.0) * 2.0
    with tf.Session(engine_cluster["worker", 0].target) as sess:
        values = [sess.run(c) for _ in range(5)]
        assert runstep_calls == [] and len(looked_up) == 1, looked_up
    assert values == [6.0] * 5


def test_a_step_with_a_deadline_still_goes_through_runstep(engine_cluster, runstep_calls):
    with tf.device("/job:ps/task:0"):
        c = tf.constant(3.0) * 2.0
    with tf.Session(engine_cluster["worker", 0].target) as sess:
        sess.run(c)
        sess._master.run_step(sess._handle, {}, [c.name], [], b"{}", timeout=30.0)
    assert len(runstep_calls) == 1


def test_string_feeds_and_fetches_arrive_as_bytes_as_over_grpc(engine_cluster):
    with tf.device("/job:worker/task:1"):
        s = tf.placeholder(tf.string, [2])
        joined = tf.identity(s)
    with tf.Session(engine_cluster["worker", 0].target) as sess:
        assert sess.run(joined, {s: ["a", "bc"]}).tolist() == [b"a", b"bc"]


class _FakeServer:
    engine = "the engine"


def test_a_client_without_the_servers_token_is_not_served_directly():
    server = _FakeServer()
    local_master.register("localhost:1", server, "secret")
    try:
        assert local_master.lookup("127.0.0.1:1", "secret") == "the engine"
        assert local_master.lookup("localhost:1", "other") is None
        assert local_master.lookup("localhost:2", "secret") is None
    finally:
        local_master.forget("localhost:1", server)
    assert local_master.lookup("localhost:1", "secret") is None


def test_a_server_collected_without_stop_is_not_served_directly():
    server = _FakeServer()
    local_master.register("localhost:1", server, "")
    del server
    assert local_master.lookup("localhost:1", "") is None


def test_ctrl_c_aborts_the_step_on_every_task_so_the_queue_keeps_its_next_element(
        engine_cluster):
    """Ctrl-C during a step blocked on the ps (a dequeue from an empty queue), run on this
    thread by the in-process master, raises KeyboardInterrupt and aborts the step on the
    ps: its dequeue does not swallow the element enqueued afterwards."""
    import time

    from tfteach.ops.data_flow_ops import FIFOQueue

    with tf.device("/job:ps/task:0"):
        q = FIFOQueue(-1, tf.float32, shapes=(), name="local_ctrl_c_q",
                      shared_name="local_ctrl_c_q")
        take = q.dequeue()
        put = q.enqueue(tf.constant(5.0))
    with tf.device("/job:worker/task:1"):
        doubled = take * 2.0
    sess = tf.Session(engine_cluster["worker", 0].target)
    with pytest.raises(KeyboardInterrupt), ctrl_c_after(1.0):
        sess.run(doubled)
    time.sleep(4.0)   # the abort reaches the tasks asynchronously; CI may be loaded
    sess.run(put)
    assert sess.run(doubled, options=tf.RunOptions(timeout_in_ms=10000)) == 10.0
