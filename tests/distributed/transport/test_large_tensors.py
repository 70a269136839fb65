"""Tensors larger than a reused segment or the gRPC message cap cross between processes:
on one host through shared-memory segments of their own, across hosts not at all (a clear
ResourceExhaustedError naming TFTEACH_MAX_MESSAGE_BYTES)."""
from pathlib import Path

import numpy as np
import pytest

import tfteach as tf
from tfteach import errors
from tfteach.cluster import LocalCluster
from tfteach.distributed.protocol import limits
from tfteach.distributed.client import in_process_master as local_master
from tfteach.distributed.transport import shm
from tfteach.distributed.client.client import ClusterClient
from tfteach.distributed.service.grpc_server import Server

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not shm.available(), reason="needs /dev/shm")]
CAP = 1 << 20               # the in-process task's message cap
SMALL = 1 << 19             # elements of int64: a 4 MiB tensor, four times the cap
BIG = 300 << 20 >> 3        # elements of int64: a 300 MiB tensor, over MAX_REUSED_BYTES


@pytest.fixture
def capped_server(monkeypatch):
    """A task with a small message cap, which this process's sessions reach over gRPC (as
    a client in another process would; not as its ``local_master``)."""
    monkeypatch.setattr(local_master, "find", lambda address, token: None)
    spec = {"worker": ["localhost:0"]}
    with Server(spec, job_name="worker", task_index=0, max_message_bytes=CAP) as server:
        yield server


def _sum_and_sample(n):
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.int64, [n], name="x")
        return x, tf.reduce_sum(x), tf.gather(x, np.arange(0, n, 1000))


def test_a_feed_over_the_message_cap_crosses_on_this_host(capped_server, monkeypatch):
    monkeypatch.setattr(shm, "MAX_REUSED_BYTES", CAP)   # no reused segment holds it
    x, total, sample = _sum_and_sample(SMALL)
    data = np.arange(SMALL, dtype=np.int64)
    with tf.Session(capped_server.target) as sess:
        got_total, got_sample = sess.run([total, sample], {x: data})
    assert (got_total, got_sample.tolist()) == (data.sum(), data[::1000].tolist())


def test_a_fetch_over_the_message_cap_crosses_on_this_host(capped_server, monkeypatch):
    monkeypatch.setattr(shm, "MAX_REUSED_BYTES", CAP)
    with tf.device("/job:worker/task:0"):
        y = tf.range(SMALL, dtype=tf.int64)
    with tf.Session(capped_server.target) as sess:
        np.testing.assert_array_equal(sess.run(y), np.arange(SMALL))


def test_a_feed_over_the_cap_across_hosts_is_resource_exhausted_naming_the_cap(
        capped_server, monkeypatch):
    monkeypatch.setattr(shm, "available", lambda: False)    # as between two hosts
    x, total, _ = _sum_and_sample(SMALL)
    with tf.Session(capped_server.target) as sess:
        with pytest.raises(errors.ResourceExhaustedError) as info:
            sess.run(total, {x: np.zeros(SMALL, np.int64)})
    assert limits.MAX_MESSAGE_ENV in info.value.hint


def test_a_feed_taken_from_its_own_segment_leaves_no_segment_behind(capped_server,
                                                                     monkeypatch):
    monkeypatch.setattr(shm, "MAX_REUSED_BYTES", CAP)
    x, total, _ = _sum_and_sample(SMALL)
    before = set(shm.list_segments())
    with tf.Session(capped_server.target) as sess:
        sess.run(total, {x: np.ones(SMALL, np.int64)})
        left = set(shm.list_segments()) - before
    assert not [name for name in left if (shm.SHM_DIR / name).stat().st_size >= 4 << 20]


@pytest.fixture(scope="module")
def task():
    """A one-task LocalCluster: ``(target, pid of the task)``."""
    with LocalCluster(ps=0, workers=1) as cluster:
        client = ClusterClient(cluster.token)
        try:
            pid = client.worker(cluster.target("worker", 0)).get_status()["pid"]
        finally:
            client.close()
        yield cluster.target("worker", 0), pid


def _peak_growth(pid, run):
    """``run()``'s result and how far process ``pid``'s peak RSS rose above its RSS."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")      # peak RSS := RSS
    before = _status_kib(pid, "VmRSS")
    result = run()
    return result, (_status_kib(pid, "VmHWM") - before) << 10


def _status_kib(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


@pytest.mark.slow
def test_a_300_mib_feed_arrives_intact_at_a_task_holding_it_at_most_2_5_times(task):
    target, pid = task
    x, total, sample = _sum_and_sample(BIG)
    data = np.arange(BIG, dtype=np.int64)
    with tf.Session(target) as sess:
        (got_total, got_sample), growth = _peak_growth(
            pid, lambda: sess.run([total, sample], {x: data}))
    assert (got_total, got_sample.tolist()) == (data.sum(), data[::1000].tolist())
    assert growth < 2.5 * data.nbytes


@pytest.mark.slow
def test_a_300_mib_fetch_arrives_intact_holding_it_at_most_2_5_times(task):
    target, _ = task
    with tf.device("/job:worker/task:0"):
        y = tf.range(BIG, dtype=tf.int64)
    with tf.Session(target) as sess:
        got, growth = _peak_growth("self", lambda: sess.run(y))
        assert growth < 2.5 * got.nbytes
    assert got[-1] == BIG - 1 and (got == np.arange(BIG)).all()


@pytest.mark.slow
def test_a_graph_with_constants_over_64_mib_creates_its_session_on_a_default_task():
    """A graph's constants travel inside CreateSession (a 64 MiB variable initializer, as
    in the cluster benchmark): the default cap must let it through, as TF's 2 GB does."""
    big = np.ones(64 << 20 >> 2, np.float32)
    with tf.device("/job:worker/task:0"):
        v = tf.Variable(big, name="v")
        total = tf.reduce_sum(v)
    with Server({"worker": ["localhost:0"]}, job_name="worker", task_index=0) as server:
        with tf.Session(server.target) as sess:
            sess.run(v.initializer)
            assert sess.run(total) == big.size
