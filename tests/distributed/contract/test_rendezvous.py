"""The rendezvous hands each tensor over once, never blocks forever, and cancels per step."""
import threading

import pytest

from tfteach import errors
from tfteach.distributed.contract.rendezvous import Rendezvous


def test_send_then_recv_hands_the_value_over_once():
    table = Rendezvous()
    table.send(1, "a", 42)
    assert table.recv(1, "a", timeout=1) == (42, False)
    assert table.pending() == []


def test_recv_waits_for_a_later_send():
    table = Rendezvous()
    threading.Timer(0.05, table.send, (3, "k", "v", True)).start()
    assert table.recv(3, "k", timeout=10) == ("v", True)


def test_recv_gives_up_after_its_timeout():
    with pytest.raises(errors.DeadlineExceededError, match="waiting for tensor 'k' of step 1"):
        Rendezvous().recv(1, "k", timeout=0.05)


def test_steps_are_separate():
    table = Rendezvous()
    table.send(1, "k", "one")
    with pytest.raises(errors.DeadlineExceededError):
        table.recv(2, "k", timeout=0.01)
    assert table.recv(1, "k", timeout=0) == ("one", False)


def test_sending_a_key_twice_is_already_exists():
    table = Rendezvous()
    table.send(1, "k", 1)
    with pytest.raises(errors.AlreadyExistsError, match="already sent"):
        table.send(1, "k", 2)


def test_abort_step_wakes_its_waiters_and_fails_later_calls():
    table = Rendezvous()
    failures = []

    def wait():
        try:
            table.recv(5, "k", timeout=30)
        except errors.OpError as err:
            failures.append(err)

    waiter = threading.Thread(target=wait)
    waiter.start()
    table.abort_step(5, errors.AbortedError("worker 1 failed"))
    waiter.join(10)
    assert [type(err) for err in failures] == [errors.AbortedError]
    with pytest.raises(errors.AbortedError):
        table.send(5, "other", 1)
    table.send(6, "k", 1)           # other steps are unaffected


def test_abort_all_cancels_waiting_steps_even_without_tensors():
    table = Rendezvous()
    failures = []
    waiter = threading.Thread(target=lambda: failures.append(
        pytest.raises(errors.CancelledError, table.recv, 9, "k", 30)))
    waiter.start()
    while not table._waiting:        # wait until the receiver is registered
        threading.Event().wait(0.005)
    table.abort_all()
    waiter.join(10)
    assert not waiter.is_alive() and failures


def test_cleanup_step_drops_leftover_tensors():
    table = Rendezvous()
    table.send(1, "a", 1)
    table.send(2, "b", 2)
    table.cleanup_step(1)
    assert table.pending() == [(2, "b")]
