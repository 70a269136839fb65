"""LocalCluster(network=...): real task processes whose tensors cross a modelled link, so a
step's transfers take at least what the hardware model says a transfer of their size over
that link takes, and transfers through one task's port queue behind each other."""
import time

import numpy as np
import pytest

import tfteach as tf
from tfteach import errors
from tfteach.distributed.local import task_registry as registry
from tfteach.distributed.local.local_cluster import LocalCluster
from tfteach.hardware import profiles

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

PROFILE = "2 hosts x 2 V100, 1 Gbit"
MIB = 1 << 20
SIZE = 2 * MIB
SLACK_US = 500      # step stats of two processes: each rounds to microseconds from its clock
PS0, PS1 = "/job:ps/replica:0/task:0", "/job:ps/replica:0/task:1"
W0, W1 = "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


@pytest.fixture(scope="module")
def slow_cluster():
    with LocalCluster(ps=2, workers=2, network=PROFILE) as cluster:
        yield cluster


def fan_in_and_out():
    """2 MiB from each ps to worker 0 (one receiving port), and ps 0's tensor to both workers
    (one sending port)."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.constant(np.ones(SIZE // 4, np.float32), name="a")
        with tf.device("/job:ps/task:1"):
            b = tf.constant(np.ones(SIZE // 4, np.float32), name="b")
        with tf.device("/job:worker/task:1"):
            on_w1 = tf.reduce_sum(a)
        with tf.device("/job:worker/task:0"):
            total = tf.reduce_sum(a) + tf.reduce_sum(b) + on_w1
    return graph, total


def test_the_cluster_says_which_link_it_models(slow_cluster):
    assert slow_cluster.network is profiles.SHIPPED[PROFILE].network is profiles.ETH_1G
    assert "network='1 Gbit Ethernet'" in repr(slow_cluster)
    assert registry.read_entry(slow_cluster.id)["network"] == "1 Gbit Ethernet"


def test_each_traced_transfer_takes_at_least_the_modelled_link_time(slow_cluster):
    graph, total = fan_in_and_out()
    link = slow_cluster.network
    with tf.Session(slow_cluster.target("worker", 0), graph=graph) as sess:
        for _ in range(2):      # the first step also registers the parts
            md = tf.RunMetadata()
            out = sess.run(total, run_metadata=md,
                           options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
    assert out == 3 * SIZE // 4
    big = {(t.tensor_name, t.dst_device.rsplit("/device:", 1)[0]): t
           for t in md.step_stats.transfers if t.bytes == SIZE}
    assert set(big) == {("a:0", W0), ("b:0", W0), ("a:0", W1)}
    modelled_us = link.time(SIZE) * 1e6
    for t in big.values():
        assert t.all_end_rel_micros >= modelled_us - 1

    def span(*keys):
        starts = [big[k].all_start_micros for k in keys]
        return max(big[k].all_start_micros + big[k].all_end_rel_micros for k in keys) - \
            min(starts)
    # worker 0's port receives a and b one after the other; ps 0's sends a twice
    assert span(("a:0", W0), ("b:0", W0)) >= 2 * modelled_us - 1
    assert span(("a:0", W0), ("a:0", W1)) >= 2 * modelled_us - SLACK_US


def test_an_untraced_steps_phases_wait_for_their_inputs_on_the_link(slow_cluster):
    graph, total = fan_in_and_out()
    ledger, link = slow_cluster.network_ledger, slow_cluster.network
    with tf.Session(slow_cluster.target("worker", 0), graph=graph) as sess:
        sess.run(total)                     # registers the phases
        before = time.monotonic()
        assert sess.run(total) == 3 * SIZE // 4
        after = time.monotonic()
    # phases carry every tensor through worker 0 (the master), and each is booked once
    # from the task that made it: a and b into worker 0, a into worker 1
    received_w0 = ledger.free_at(W0)[1]
    assert received_w0 >= before + 2 * link.time(SIZE)
    assert ledger.free_at(PS0)[0] >= before + link.time(SIZE)
    assert ledger.free_at(PS1)[0] >= before + link.time(SIZE)
    assert ledger.free_at(W1)[1] >= before + link.time(SIZE)
    assert after >= received_w0         # the step ended after its inputs had crossed


def test_a_fetch_from_another_task_crosses_the_link_to_the_master(slow_cluster):
    graph, total = fan_in_and_out()
    a = graph.get_tensor_by_name("a:0")
    ledger, link = slow_cluster.network_ledger, slow_cluster.network
    with tf.Session(slow_cluster.target("worker", 0), graph=graph) as sess:
        sess.run(a)
        before = time.monotonic()
        assert sess.run(a).nbytes == SIZE
    assert ledger.free_at(PS0)[0] >= before + link.time(SIZE)
    assert ledger.free_at(W0)[1] >= before + link.time(SIZE)
    assert ledger.free_at(PS1)[0] < before       # ps 1 sent nothing in that step


def test_a_placement_cell_on_the_cluster_captions_its_timeline_as_partly_modelled(
        slow_cluster):
    from tfteach.notebook.displays import Note
    from tfteach.notebook.placement_cell import (PlacementOptions, result_displays,
                                                 run_placement_cell)

    source = ("with tf.device('/job:ps/task:0'):\n    a = tf.ones([256, 256], name='a')\n"
              "with tf.device('/job:worker/task:0'):\n    s = tf.reduce_sum(a, name='s')\ns\n")
    target = slow_cluster.target("worker", 0)
    result = run_placement_cell(source, PlacementOptions(trace=True, target=target),
                                {"tf": tf})
    try:
        assert result.error is None and result.network == "1 Gbit Ethernet"
        shown = result_displays(result)
        note = shown.index(result.timeline) - 1
        assert isinstance(shown[note], Note) and "1 Gbit Ethernet" in shown[note].text
        [moved] = [t for t in result.timeline.data["transfers"] if t["tensor"] == "a:0"]
        assert moved["end_us"] - moved["start_us"] >= slow_cluster.network.time(1 << 18) * 1e6
    finally:
        result.close()


def test_a_link_too_slow_for_the_steps_timeout_is_deadline_exceeded():
    dialup = profiles.LinkProfile("56k modem", 7e3, 0.1)
    with LocalCluster(ps=1, workers=1, network=dialup) as cluster:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                a = tf.constant(np.ones(1 << 16, np.float32), name="a")
            with tf.device("/job:worker/task:0"):
                total = tf.reduce_sum(a)
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            with pytest.raises(errors.DeadlineExceededError, match="56k modem") as info:
                sess.run(total, options=tf.RunOptions(timeout_in_ms=300))
            assert "Hint:" in str(info.value)
            with pytest.raises(errors.DeadlineExceededError):
                sess.run(total, options=tf.RunOptions(timeout_in_ms=300,
                                                      trace_level=tf.RunOptions.FULL_TRACE))
            assert cluster.alive("worker", 0) and cluster.alive("ps", 0)


def test_an_unknown_network_is_refused_before_any_task_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("TFTEACH_REGISTRY_DIR", str(tmp_path))
    with pytest.raises(errors.InvalidArgumentError,
                       match="Known networks: .*'2 hosts x 2 V100, 10 Gbit'.*'10 Gbit Ethernet'"):
        LocalCluster(ps=1, workers=1, network="10 Gbit Etherent")
    assert not list(tmp_path.iterdir())


def test_tensorflow_servers_cannot_model_a_network():
    with pytest.raises(ValueError, match="network"):
        LocalCluster(ps=1, workers=1, backend="tensorflow", network="1 Gbit Ethernet")
