"""A task checks what it receives, whoever sent it: raw requests built with the protos
directly. Feeds must have the fed tensor's dtype and a compatible shape (no conversion on
the server), names must exist, graphs must be valid (ExtendSession is all or nothing), and
each refusal is a client error, never InternalError, with no traceback in the log."""
import json
import logging

import grpc
import numpy as np
import pytest
from hostile_graphs import hostile_graphs

import tfteach as tf
from tfteach import errors
from tfteach.distributed.engine.graph_engine import GraphEngine
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc
from tfteach.distributed.protocol.status import error_from_rpc
from tfteach.framework.graph_io import graph_to_json

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]
CPU = "/job:local/replica:0/task:0/device:CPU:0"


def _graph():
    """v (float32 [1], starts at 1.0) <- assign x (a float32 [1] placeholder)."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [1], name="x")
        v = tf.Variable([1.0], name="v")
        tf.assign(v, x, name="update")
    return g


class _Raw:
    """MasterService and WorkerService stubs that raise the server's OpError."""

    def __init__(self, server):
        self.channel = grpc.insecure_channel(server.target[len("grpc://"):])
        self.stubs = [pb_grpc.MasterServiceStub(self.channel),
                      pb_grpc.WorkerServiceStub(self.channel)]

    def __call__(self, method, request):
        stub = next(s for s in self.stubs if hasattr(s, method))
        try:
            return getattr(stub, method)(request, timeout=30)
        except grpc.RpcError as err:
            raise error_from_rpc(err) from None


@pytest.fixture
def raw(make_server, monkeypatch):
    monkeypatch.setenv("TFTEACH_VIRTUAL_GPUS", "0")
    server = make_server(engine_factory=GraphEngine)
    server.start()
    client = _Raw(server)
    yield client
    client.channel.close()


@pytest.fixture
def session(raw):
    """A session over ``_graph`` with v initialized."""
    g = _graph()
    handle = raw("CreateSession", pb.CreateSessionRequest(
        graph_def=graph_to_json(g.get_operations()))).session_handle
    raw("RunStep", pb.RunStepRequest(session_handle=handle, target=["v/Assign"]))
    return handle


def _feed(value, name="x:0"):
    value = np.asarray(value)
    header = pb.TensorHeader(dtype=value.dtype.str, shape=value.shape, nbytes=value.nbytes)
    return pb.NamedTensor(name=name, tensor=pb.TensorProto(header=header,
                                                           content=value.tobytes()))


def _v(raw, handle):
    answer = raw("RunStep", pb.RunStepRequest(session_handle=handle, fetch=["v:0"]))
    tensor = answer.tensor[0].tensor
    return np.frombuffer(tensor.content, dtype=np.dtype(tensor.header.dtype))


def test_raw_runstep_feeding_complex128_into_float32_placeholder_is_refused(raw, session):
    request = pb.RunStepRequest(session_handle=session, feed=[_feed([5 + 1j])],
                                target=["update"])
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Expects arg\[0\] to be float but complex128 is provided.*"
                             r"'x:0'.*shape \[1\]"):
        raw("RunStep", request)


def test_refused_feed_leaves_the_variable_unchanged(raw, session):
    with pytest.raises(errors.InvalidArgumentError):
        raw("RunStep", pb.RunStepRequest(session_handle=session, feed=[_feed([5 + 1j])],
                                         target=["update"]))
    value = _v(raw, session)
    assert value.dtype == np.float32 and value.tolist() == [1.0]


def test_feeding_float64_into_float32_is_refused_without_conversion(raw, session):
    with pytest.raises(errors.InvalidArgumentError, match="to be float but double"):
        raw("RunStep", pb.RunStepRequest(session_handle=session, feed=[_feed([5.0])],
                                         target=["update"]))


def test_feed_of_incompatible_shape_is_refused(raw, session):
    feed = _feed(np.zeros(2, np.float32))
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"Cannot feed value of shape \(2,\) for Tensor 'x:0'"):
        raw("RunStep", pb.RunStepRequest(session_handle=session, feed=[feed],
                                         target=["update"]))


def test_feed_of_the_right_dtype_and_shape_runs(raw, session):
    raw("RunStep", pb.RunStepRequest(session_handle=session,
                                     feed=[_feed(np.array([5.0], np.float32))],
                                     target=["update"]))
    assert _v(raw, session).tolist() == [5.0]


def test_missing_feed_names_the_placeholder_dtype_and_shape(raw, session):
    with pytest.raises(errors.InvalidArgumentError,
                       match=r"You must feed a value for placeholder tensor 'x' with dtype "
                             r"float and shape \[1\]"):
        raw("RunStep", pb.RunStepRequest(session_handle=session, target=["update"]))


def test_unknown_fetch_is_not_found_naming_it(raw, session):
    with pytest.raises(errors.NotFoundError, match="FetchOutputs node nope:0: not found"):
        raw("RunStep", pb.RunStepRequest(session_handle=session, fetch=["nope:0"]))


def test_unknown_target_is_not_found_naming_it(raw, session):
    with pytest.raises(errors.NotFoundError,
                       match="PruneForTargets: Some target nodes not found: nope"):
        raw("RunStep", pb.RunStepRequest(session_handle=session, target=["nope"]))


def test_unknown_feed_is_not_found_naming_it(raw, session):
    with pytest.raises(errors.NotFoundError,
                       match="FeedInputs: unable to find feed output y:0"):
        raw("RunStep", pb.RunStepRequest(session_handle=session,
                                         feed=[_feed([1.0], name="y:0")], fetch=["v:0"]))


def test_worker_rungraph_checks_its_feeds(raw):
    ops = _graph().get_operations()
    handle = raw("RegisterGraph", pb.RegisterGraphRequest(graph_def=graph_to_json(
        ops, {op.name: CPU for op in ops}))).graph_handle
    with pytest.raises(errors.InvalidArgumentError, match="to be float but complex128"):
        raw("RunGraph", pb.RunGraphRequest(graph_handle=handle, step_id=1,
                                           send=[_feed([1j])], recv_key=["x:0"]))


def _extension(g, name):
    with g.as_default():
        tf.identity(g.get_tensor_by_name("v:0"), name=name)
    return graph_to_json(g.get_operations()[-1:])


def test_failed_extend_keeps_the_graph_and_version_and_the_session_usable(raw, session):
    g = _graph()
    version = g.version
    bad = json.loads(_extension(g, "bad"))
    bad["node"][0]["input"] = ["missing:0"]
    with pytest.raises(errors.InvalidArgumentError, match="NodeDef 'bad', field 'input'"):
        raw("ExtendSession", pb.ExtendSessionRequest(
            session_handle=session, graph_def=json.dumps(bad).encode(),
            current_graph_version=version))
    good = _extension(_graph(), "good")
    answer = raw("ExtendSession", pb.ExtendSessionRequest(
        session_handle=session, graph_def=good, current_graph_version=version))
    assert answer.new_graph_version == version + 1
    fetched = raw("RunStep", pb.RunStepRequest(session_handle=session, fetch=["good:0"]))
    assert fetched.tensor[0].name == "good:0"


def test_half_valid_extension_adds_none_of_its_nodes(raw, session):
    g = _graph()
    version = g.version
    first = json.loads(_extension(g, "first"))["node"][0]
    second = dict(first, name="second", op="NoSuchOp")
    with pytest.raises(errors.InvalidArgumentError, match="NodeDef 'second', field 'op'"):
        raw("ExtendSession", pb.ExtendSessionRequest(
            session_handle=session, current_graph_version=version,
            graph_def=json.dumps({"version": 1, "node": [first, second]}).encode()))
    with pytest.raises(errors.NotFoundError, match="first:0"):
        raw("RunStep", pb.RunStepRequest(session_handle=session, fetch=["first:0"]))


@pytest.mark.parametrize("label,graph_def", list(hostile_graphs()),
                         ids=[label for label, _ in hostile_graphs()])
def test_hostile_graph_is_invalid_argument_without_a_traceback(raw, caplog, label,
                                                               graph_def):
    caplog.set_level(logging.DEBUG, logger="tfteach.distributed")
    with pytest.raises(errors.InvalidArgumentError, match="CreateSession"):
        raw("CreateSession", pb.CreateSessionRequest(graph_def=graph_def))
    with pytest.raises(errors.InvalidArgumentError, match="RegisterGraph"):
        raw("RegisterGraph", pb.RegisterGraphRequest(graph_def=graph_def))
    assert not [r for r in caplog.records if r.exc_info]
