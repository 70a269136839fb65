"""The modelled network between a cluster's tasks: which link a name means, and the ledger
that queues transfers on each task's port as the schedule of ``predict`` does."""
import dataclasses

import pytest

from tfteach import errors
from tfteach.hardware import profiles
from tfteach.hardware.network import NETWORKS, LinkLedger, network_link

TASKS = ["/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0",
         "/job:worker/replica:0/task:1"]
PS, W0, W1 = TASKS
MIB = 1 << 20


def test_a_profile_name_means_the_link_between_its_hosts():
    assert network_link("2 hosts x 2 V100, 10 Gbit") is profiles.ETH_10G
    assert network_link(profiles.SHIPPED["4 hosts x 8 V100, InfiniBand"]) is profiles.IB_EDR
    assert network_link("1 Gbit Ethernet") is NETWORKS["1 Gbit Ethernet"] is profiles.ETH_1G
    slow = profiles.LinkProfile("DSL", 2e6, 0.02)
    assert network_link(slow) is slow


def test_a_profile_file_names_its_network(tmp_path):
    path = tmp_path / "mine.json"
    dataclasses.replace(profiles.SHIPPED["H200"], network=profiles.ETH_25G).save(path)
    assert network_link(str(path)) == profiles.ETH_25G


def test_an_unknown_network_is_invalid_and_lists_the_known_ones():
    with pytest.raises(errors.InvalidArgumentError) as info:
        network_link("56k modem")
    text = str(info.value)
    assert "'56k modem'" in text and "Hint:" in text
    for name in [*profiles.SHIPPED, *NETWORKS]:
        assert repr(name) in text


def test_transfers_through_one_port_queue_and_others_overlap(tmp_path):
    link = profiles.ETH_1G
    ledger = LinkLedger.create(tmp_path / "l", TASKS, link)
    t = link.time(MIB)
    assert ledger.claim(PS, W0, MIB, now=100.0) == pytest.approx((100.0, 100.0 + t))
    # the ps's sending end is busy: the copy to worker 1 waits for it
    assert ledger.claim(PS, W1, MIB, now=100.0) == pytest.approx((100.0 + t, 100.0 + 2 * t))
    # worker 1 -> worker 0: worker 0's receiving end is busy with the ps's copy
    start, end = ledger.claim(W1, W0, MIB, now=100.0)
    assert (start, end) == pytest.approx((100.0 + t, 100.0 + 2 * t))
    # worker 0 -> ps: both ends free at 100.0
    assert ledger.claim(W0, PS, MIB, now=100.0) == pytest.approx((100.0, 100.0 + t))


def test_ledger_is_shared_by_every_process_that_opens_its_file(tmp_path):
    link = profiles.ETH_10G
    first = LinkLedger.create(tmp_path / "l", TASKS, link)
    second = LinkLedger(tmp_path / "l", TASKS, link)
    _, end = first.claim(PS, W0, 10 * MIB, now=5.0)
    assert second.claim(PS, W1, 10, now=5.0) == pytest.approx((end, end + link.time(10)))
    first.close()
    second.close()
