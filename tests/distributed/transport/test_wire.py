"""Tensors cross as a header plus raw bytes, chunked, and bad headers are refused."""
import numpy as np
import pytest

from tfteach import errors
from tfteach.distributed.transport import wire
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb


@pytest.mark.parametrize("value", [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.array(7, dtype=np.int64),
    np.array([True, False]),
    np.arange(6, dtype=">i4"),
    np.zeros((0, 5), dtype=np.float64),
    np.array([1 + 2j], dtype=np.complex64),
    np.arange(20, dtype=np.float64).reshape(4, 5)[:, 1:3],   # not contiguous
])
def test_unary_round_trip_keeps_dtype_shape_and_values(value):
    back = wire.from_proto(wire.to_proto(value))
    assert back.dtype == value.dtype and back.shape == value.shape
    np.testing.assert_array_equal(back, value)


def test_content_is_raw_bytes_not_repeated_fields():
    proto = wire.to_proto(np.arange(4, dtype="<f4"))
    assert proto.content == np.arange(4, dtype="<f4").tobytes()
    assert proto.header.dtype == "<f4" and list(proto.header.shape) == [4]


def test_string_tensors_decode_to_bytes_like_tf():
    back = wire.from_proto(wire.to_proto(np.array([["a", "héllo"], ["", "b"]], dtype=object)))
    assert back.shape == (2, 2)
    assert back.tolist() == [[b"a", "héllo".encode()], [b"", b"b"]]


@pytest.mark.parametrize("shape", [(0,), (0, 3)])
def test_empty_string_tensors_cross(shape):
    """A readiness report with nothing uninitialized is an empty string tensor."""
    back = wire.from_proto(wire.to_proto(np.empty(shape, dtype=object)))
    assert back.dtype == object and back.shape == shape


def test_object_arrays_of_other_things_are_refused():
    with pytest.raises(errors.InvalidArgumentError, match="str or bytes"):
        wire.to_proto(np.array([1, None], dtype=object))


def test_stream_sends_the_header_then_chunks_and_assembles_into_one_buffer():
    value = np.random.default_rng(0).standard_normal(10_000)
    messages = list(wire.stream(value, chunk_bytes=4096))
    assert len(messages) == 1 + -(-value.nbytes // 4096)
    parsed = [pb.RecvTensorResponse.FromString(m) for m in messages]   # plain protobuf
    assert parsed[0].HasField("header") and not parsed[0].chunk
    assert not parsed[1].HasField("header") and len(parsed[1].chunk) == 4096
    back, is_dead = wire.assemble(iter(messages))
    np.testing.assert_array_equal(back, value)
    assert not is_dead


def test_chunk_lengths_of_every_varint_size_parse():
    for size in (1, 127, 128, 16383, 16384, 70000):
        value = np.arange(size, dtype=np.uint8)
        messages = list(wire.stream(value, chunk_bytes=size))
        assert pb.RecvTensorResponse.FromString(messages[1]).chunk == value.tobytes()
        np.testing.assert_array_equal(wire.assemble(iter(messages))[0], value)


def test_a_peer_that_sends_header_and_chunk_together_is_understood():
    value = np.arange(6, dtype=np.int32)
    header, content = wire.encode(value)
    only = pb.RecvTensorResponse(header=header, chunk=content.tobytes()).SerializeToString()
    np.testing.assert_array_equal(wire.assemble(iter([only]))[0], value)


def test_dead_flag_crosses():
    _, is_dead = wire.assemble(wire.stream(np.zeros(3), is_dead=True))
    assert is_dead


def test_short_stream_is_data_loss():
    messages = list(wire.stream(np.zeros(5000), chunk_bytes=4096))[:-1]
    with pytest.raises(errors.DataLossError, match="ended after 36864 of 40000 bytes"):
        wire.assemble(iter(messages))


def test_too_long_stream_is_data_loss():
    messages = list(wire.stream(np.zeros(10), chunk_bytes=40))
    messages.append(pb.RecvTensorResponse(chunk=b"x").SerializeToString())
    with pytest.raises(errors.DataLossError, match="more than the 80 bytes"):
        wire.assemble(iter(messages))


def test_malformed_chunk_is_data_loss():
    messages = list(wire.stream(np.zeros(10), chunk_bytes=40))
    messages[1] = b"\x12\xff\xff\xff"
    with pytest.raises(errors.DataLossError, match="malformed RecvTensor chunk"):
        wire.assemble(iter(messages))


def test_stream_without_header_is_data_loss():
    with pytest.raises(errors.DataLossError, match="before the tensor header"):
        wire.assemble(iter([pb.RecvTensorResponse(chunk=b"abc").SerializeToString()]))


@pytest.mark.parametrize("header, message", [
    (pb.TensorHeader(dtype="O", shape=[1], nbytes=8), "unknown dtype"),
    (pb.TensorHeader(dtype="nonsense", shape=[1], nbytes=8), "unknown dtype"),
    (pb.TensorHeader(dtype="<f4", shape=[-1], nbytes=4), "impossible size"),
    (pb.TensorHeader(dtype="<f4", shape=[3], nbytes=8), "does not match"),
    (pb.TensorHeader(dtype="<f4", shape=[1 << 40], nbytes=1 << 42), "impossible size"),
    (pb.TensorHeader(dtype="string", shape=[4], nbytes=8), "shorter than its lengths"),
])
def test_bad_headers_are_refused_before_allocating(header, message):
    with pytest.raises(errors.DataLossError, match=message):
        wire.check_header(header)


def test_string_lengths_that_do_not_add_up_are_data_loss():
    proto = wire.to_proto(np.array([b"abc"], dtype=object))
    proto.content = proto.content[:-1] + b""
    proto.header.nbytes = len(proto.content)
    with pytest.raises(errors.DataLossError, match="do not add up"):
        wire.from_proto(proto)


def test_unary_tensor_may_not_point_at_shared_memory():
    proto = wire.to_proto(np.zeros(2))
    proto.header.shm_name = "tfteach_1_0_00"
    with pytest.raises(errors.DataLossError):
        wire.from_proto(proto)
