"""A remote OpError arrives as the same class with its message and hint."""
import json

import grpc
import pytest
from dist_helpers import ReportingEngine

from tfteach import errors
from tfteach.distributed.protocol import status
from tfteach.distributed.contract.engine_api import set_engine_factory

ALL_ERRORS = [cls for cls in vars(errors).values() if isinstance(cls, type)
              and issubclass(cls, errors.OpError) and cls is not errors.OpError]


def test_every_error_code_maps_to_its_grpc_status_and_back():
    for cls in ALL_ERRORS:
        code = status.status_code(cls.error_code)
        assert code.name == {"UnknownError": "UNKNOWN"}.get(cls.__name__, code.name)
        assert status.error_code(code) == cls.error_code


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda cls: cls.__name__)
def test_remote_error_keeps_class_message_and_hint(make_server, client, cls):
    server = make_server(engine_factory=ReportingEngine)
    request = {"raise": cls.__name__, "message": f"{cls.__name__} on worker: é",
               "hint": "Do the thing."}
    with pytest.raises(cls) as info:
        client.worker(server.target).register_graph(json.dumps(request).encode())
    assert type(info.value) is cls
    assert info.value.message == f"{cls.__name__} on worker: é"
    assert str(info.value).endswith("\nHint: Do the thing.")


def test_engine_bug_becomes_internal_error_and_server_survives(make_server, client):
    server = make_server(engine_factory=ReportingEngine)
    worker = client.worker(server.target)
    with pytest.raises(errors.InternalError, match="ZeroDivisionError") as info:
        worker.register_graph(b'{"raise": "ZeroDivisionError"}')
    assert "bug in tfteach's engine" in str(info.value)
    assert worker.get_status(timeout=10)["devices"]


def test_set_engine_factory_is_the_hook_for_the_real_engine(client):
    previous = set_engine_factory(ReportingEngine)
    try:
        from tfteach.distributed.service.grpc_server import create_local_server

        server = create_local_server()
        try:
            device = client.worker(server.target).get_status(timeout=10)["devices"][0]
            assert "TFTEACH_VIRTUAL_GPUS" in device["physical_device_desc"]
        finally:
            server.stop()
    finally:
        set_engine_factory(previous)


def test_transport_errors_name_the_task():
    class Failure(grpc.RpcError):
        def code(self):
            return grpc.StatusCode.UNAVAILABLE

        def details(self):
            return "Connection reset by peer"

        def trailing_metadata(self):
            return ()

    err = status.error_from_rpc(Failure(), "/job:ps/replica:0/task:0", "localhost:2222")
    assert isinstance(err, errors.UnavailableError)
    assert "/job:ps/replica:0/task:0 (localhost:2222)" in err.message
    assert "Is that task started?" in str(err)
