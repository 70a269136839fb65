"""Shared-memory segments are named after their creator, taken once, and never left behind."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from tfteach import errors
from tfteach.distributed.transport import shm
from tfteach.distributed.transport import shm_callers

pytestmark = pytest.mark.skipif(not shm.available(), reason="needs /dev/shm")


def _export(nbytes=1 << 20):
    data = np.arange(nbytes, dtype=np.uint8)
    return data, shm.export(memoryview(data))


def test_export_names_the_segment_after_this_process():
    _, name = _export()
    try:
        assert name.startswith(f"tfteach_{os.getpid()}_")
        assert shm.owner_pid(name) == os.getpid()
        assert (shm.SHM_DIR / name).stat().st_mode & 0o777 == 0o600
    finally:
        shm.release(name)


def test_take_copies_out_and_unlinks():
    data, name = _export()
    out = np.empty_like(data)
    shm.take(name, data.nbytes, memoryview(out))
    np.testing.assert_array_equal(out, data)
    assert not (shm.SHM_DIR / name).exists()


def test_take_of_a_missing_segment_is_data_loss_with_hint():
    with pytest.raises(errors.DataLossError, match="is gone") as info:
        shm.take(_missing_name(), 4, memoryview(bytearray(4)))
    assert "Hint:" in str(info.value)


def test_take_refuses_names_outside_tfteach_segments():
    with pytest.raises(errors.DataLossError, match="Invalid shared-memory segment name"):
        shm.take("../../etc/passwd", 4, memoryview(bytearray(4)))


def test_take_refuses_a_size_mismatch_and_still_unlinks():
    data, name = _export()
    with pytest.raises(errors.DataLossError, match="does not hold"):
        shm.take(name, data.nbytes + 1, memoryview(bytearray(data.nbytes + 1)))
    assert not (shm.SHM_DIR / name).exists()


def test_sender_drops_segments_nobody_took_after_linger(monkeypatch):
    _, forgotten = _export()
    monkeypatch.setattr(shm, "LINGER_S", 0.0)
    _, fresh = _export()
    try:
        assert not (shm.SHM_DIR / forgotten).exists()
    finally:
        shm.release(fresh)


def test_release_own_removes_every_pending_segment():
    names = [_export()[1] for _ in range(3)]
    shm.release_own()
    assert not any((shm.SHM_DIR / name).exists() for name in names)


@pytest.mark.timeout(60)
def test_sweep_removes_segments_of_a_killed_process():
    code = ("import numpy as np, sys, time; from tfteach.distributed.transport import shm; "
            "print(shm.export(memoryview(np.ones(1 << 20, np.uint8))), flush=True); "
            "time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        name = proc.stdout.readline().strip()
        assert (shm.SHM_DIR / name).exists()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert name in shm.sweep_dead()
        assert not (shm.SHM_DIR / name).exists()
    finally:
        proc.kill()
        proc.wait()


def _answer(values, reply):
    """What RunGraph does with ``values`` and an offered reply segment (services.RunGraph)."""
    from tfteach.distributed.transport import wire
    from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

    response = pb.RunGraphResponse()
    wire.add_named(response.sent, {str(i): v for i, v in enumerate(values)},
                   shm.mapped(reply.name, reply.size, os.getpid()), reply.name, shm_ok=True)
    return pb.RunGraphResponse.FromString(response.SerializeToString())


def test_a_reply_segment_carries_several_tensors_and_is_reused():
    from tfteach.distributed.transport import wire

    reply = shm.reused_segment(3 << 20)
    try:
        assert reply.size >= 3 << 20 and (shm.SHM_DIR / reply.name).exists()
        big = [np.full(1 << 18, i, np.float32) for i in range(2)]     # 1 MiB each
        small = np.arange(4.0)
        answer = _answer(big + [small], reply)
        headers = [item.tensor.header for item in answer.sent]
        assert [h.shm_name for h in headers] == [reply.name, reply.name, ""]
        assert headers[1].shm_offset >= headers[0].nbytes
        got = [wire.from_reply(item.tensor, reply)[0] for item in answer.sent]
        for want, value in zip(big + [small], got, strict=True):
            np.testing.assert_array_equal(value, want)
        got[0][:] = 7                                   # a copy: the segment is not shared
        assert wire.from_reply(answer.sent[0].tensor, reply)[0][0] == 0
        shm.give_back(reply)
        assert shm.reused_segment(1 << 20) is reply      # the free one is reused
    finally:
        shm.give_back(reply, reuse=False)
    assert not (shm.SHM_DIR / reply.name).exists()


def test_a_lent_reply_segment_returns_to_the_pool_only_once_its_array_is_freed():
    from tfteach.distributed.transport import wire

    reply = shm.reused_segment(1 << 20)
    value = np.arange(1 << 18, dtype=np.float32)
    [item] = _answer([value], reply).sent
    got = wire.from_reply(item.tensor, reply, lend=True)[0]
    np.testing.assert_array_equal(got, value)
    view = got[1:]
    del got
    shm.give_back(reply)        # the array is still out: not back yet
    others = [shm.reused_segment(reply.size) for _ in range(2)]
    for segment in others:
        shm.give_back(segment, reuse=False)
    assert reply not in others
    np.testing.assert_array_equal(view, value[1:])
    del view
    taken = [shm.reused_segment(reply.size) for _ in range(shm.KEEP_REUSED + 1)]
    try:
        assert reply in taken
    finally:
        for segment in taken:
            shm.give_back(segment, reuse=False)


def test_a_tensor_that_does_not_fit_the_reply_segment_gets_its_own():
    from tfteach.distributed.transport import wire

    reply = shm.reused_segment(1 << 20)
    try:
        value = np.ones(reply.size // 4 + 1, np.float32)
        [item] = _answer([value], reply).sent
        assert item.tensor.header.shm_name not in ("", reply.name)
        np.testing.assert_array_equal(wire.from_reply(item.tensor, reply)[0], value)
        assert not (shm.SHM_DIR / item.tensor.header.shm_name).exists()   # taken
    finally:
        shm.give_back(reply, reuse=False)


def test_mapped_refuses_names_that_are_no_segment_names():
    for name in ("../etc/passwd", f"tfteach_{os.getpid()}_999999_deadbeef"):
        with pytest.raises(errors.InvalidArgumentError, match="Invalid shared-memory"):
            shm.mapped(name, 1, os.getpid())


def test_mapped_finds_no_missing_or_short_segments():
    reply = shm.reused_segment(1 << 20)
    try:
        assert shm.mapped(_missing_name(), 1, os.getpid()) is None
        assert shm.mapped(reply.name, reply.size + 1, os.getpid()) is None
        assert len(shm.mapped(reply.name, reply.size, os.getpid())) == reply.size
    finally:
        shm.give_back(reply, reuse=False)


def test_a_reply_outside_its_segment_is_data_loss():
    from tfteach.distributed.transport import wire

    reply = shm.reused_segment(1 << 20)
    try:
        [item] = _answer([np.ones(1 << 18, np.float32)], reply).sent
        item.tensor.header.shm_offset = reply.size
        with pytest.raises(errors.DataLossError, match="outside reply segment"):
            wire.from_reply(item.tensor, reply)
    finally:
        shm.give_back(reply, reuse=False)


def test_release_own_removes_free_and_used_reply_segments():
    free, used = shm.reused_segment(1 << 20), shm.reused_segment(1 << 20)
    shm.give_back(free)
    shm.release_own()
    assert not (shm.SHM_DIR / free.name).exists() and not (shm.SHM_DIR / used.name).exists()
    used.view[:4] = b"ok!!"                 # a call still using it keeps its mapping
    fresh = shm.reused_segment(1 << 20)
    try:
        assert fresh is not free
    finally:
        shm.give_back(fresh, reuse=False)
        shm.give_back(used, reuse=False)


def test_a_request_carries_large_tensors_in_the_senders_segment():
    """A request's tensors of SEGMENT_MIN_BYTES or more go into the sender's reused segment,
    smaller ones inline; a receiver on this host copies them out, one told the sender is
    elsewhere refuses them, and a segment that is gone is data loss."""
    from tfteach.distributed.transport import wire
    from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

    values = {"big": np.arange(shm.SEGMENT_MIN_BYTES // 4, dtype=np.float32),
              "small": np.arange(shm.SEGMENT_MIN_BYTES // 4 - 1, dtype=np.float32)}
    segment = shm.reused_segment(wire.segment_bytes(values))
    try:
        assert wire.segment_bytes(values) == shm.SEGMENT_MIN_BYTES
        request = pb.RunStepRequest()
        wire.add_named(request.feed, values, segment.view, segment.name)
        request = pb.RunStepRequest.FromString(request.SerializeToString())
        big, small = request.feed
        assert big.tensor.header.shm_name == segment.name and big.tensor.content == b""
        assert small.tensor.header.shm_name == "" and len(small.tensor.content) > 0
        got = wire.from_named(request.feed, shm_callers.Caller.trusting(os.getpid()))
        for name, value in values.items():
            np.testing.assert_array_equal(got[name], value)
        segment.view[4:8] = b"\0\0\0\0"         # the sender reuses it: ours is a copy
        assert got["big"][1] == 1.0 and got["big"].flags.writeable
        with pytest.raises(errors.DataLossError, match="another host"):
            wire.from_named(request.feed)
    finally:
        shm.give_back(segment, reuse=False)
    big.tensor.header.shm_name = _missing_name()
    with pytest.raises(errors.DataLossError, match="no segment on this host holds"):
        wire.from_named([big], shm_callers.Caller.trusting(os.getpid()))


def _missing_name():
    """A well-formed name of this process's that no segment has."""
    return f"tfteach_{os.getpid()}_999999_{'0' * 2 * shm.RANDOM_BYTES}"
