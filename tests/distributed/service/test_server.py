"""tf.train.Server semantics: targets, inference, logging, binding and releasing ports."""
import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tfteach import errors
from tfteach.distributed.transport import security
from tfteach.distributed.transport.processes import free_ports
from tfteach.distributed.service.grpc_server import Server, create_local_server
from dist_helpers import port_is_free


def _port(server):
    return int(server.target.rsplit(":", 1)[1])




def test_create_local_server_picks_a_real_port_and_names_its_device(client):
    server = create_local_server()
    try:
        assert server.target.startswith("grpc://localhost:") and _port(server) > 0
        status = client.worker(server.target).get_status(timeout=10)
        assert "/job:localhost/replica:0/task:0/device:CPU:0" in [
            d["name"] for d in status["devices"]]
        assert status["task"] == "/job:localhost/replica:0/task:0"
    finally:
        server.stop()


def test_start_logs_the_target(make_server, caplog):
    caplog.set_level(logging.INFO, logger="tfteach.distributed")
    server = make_server()
    assert f"Started server with target: {server.target}" in caplog.text


def test_without_logging_config_the_target_goes_to_stderr():
    code = "from tfteach.distributed.service.grpc_server import create_local_server as c; c().stop()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, cwd=Path(__file__).parents[3])
    assert "Started server with target: grpc://localhost:" in result.stderr


def test_stop_releases_the_port_for_a_new_server(make_server):
    server = make_server()
    port = _port(server)
    server.stop()
    assert port_is_free(port)
    again = make_server({"local": [f"localhost:{port}"]})
    assert _port(again) == port


def test_context_manager_releases_the_port():
    with create_local_server() as server:
        port = _port(server)
        assert not port_is_free(port)
    assert port_is_free(port)


def test_start_after_stop_serves_again_on_the_same_port(make_server, client):
    server = make_server()
    server.stop()
    server.start()
    assert client.worker(server.target).get_status(timeout=10)["task"]


def test_a_second_server_on_a_live_servers_port_fails_and_keeps_the_first(make_server, client):
    port = free_ports(1)[0]
    first = make_server({"worker": [f"localhost:{port}"]})
    with pytest.raises(errors.UnknownError, match="^Could not start gRPC server") as info:
        make_server({"worker": [f"localhost:{port}"]})
    assert ".stop()" in info.value.hint and "restart the kernel" in info.value.hint
    assert "running" in repr(first)
    assert client.worker(first.target).get_status(timeout=10)["task"]


def test_a_port_taken_by_someone_else_is_unknown_error_with_hint(make_server):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(errors.UnknownError, match="^Could not start gRPC server") as info:
            make_server({"worker": [f"localhost:{port}"]})
    assert "in use" in info.value.hint


def test_several_servers_of_one_cluster_live_in_one_process(make_server, client):
    ports = free_ports(2)
    spec = {"ps": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"]}
    ps = make_server(spec, job_name="ps", task_index=0)
    worker = make_server(spec, job_name="worker", task_index=0)
    assert client.worker(ps.target).get_status(timeout=10)["task"] == "/job:ps/replica:0/task:0"
    assert client.worker(worker.target).get_status(timeout=10)["task"] == \
        "/job:worker/replica:0/task:0"


def test_job_name_is_inferred_only_when_unique():
    with pytest.raises(ValueError, match=r"^Must specify an explicit `job_name`\.$"):
        Server({"ps": ["localhost:0"], "worker": ["localhost:0"]}, start=False)


def test_task_index_is_inferred_only_when_unique():
    with pytest.raises(ValueError, match=r"^Must specify an explicit `task_index`\.$"):
        Server({"worker": ["localhost:0", "localhost:0"]}, start=False)


def test_unknown_job_is_tf_value_error():
    with pytest.raises(ValueError, match="No such job in cluster: 'chief'"):
        Server({"worker": ["localhost:0"]}, job_name="chief", start=False)


def test_only_grpc_is_spoken():
    with pytest.raises(ValueError, match="Unsupported protocol 'grpc\\+verbs'"):
        Server({"w": ["localhost:0"]}, protocol="grpc+verbs", start=False)


def test_server_def_describes_the_task(make_server):
    server = make_server({"worker": ["localhost:0"]}, start=False)
    server_def = server.server_def
    assert (server_def.job_name, server_def.task_index, server_def.protocol) == \
        ("worker", 0, "grpc")
    assert dict(server_def.cluster.job[0].tasks) == {0: server.target[len("grpc://"):]}


def test_a_server_def_builds_the_same_server(make_server, client):
    first = make_server({"worker": ["localhost:0"]}, start=False)
    server_def = first.server_def
    first.stop()
    second = make_server(server_def)
    assert second.target == first.target
    assert client.worker(second.target).get_status(timeout=10)["task"]


def test_the_server_binds_only_its_own_address(make_server, client):
    server = make_server({"worker": ["localhost:0"]})
    elsewhere = client.worker(f"127.0.0.2:{_port(server)}", "/job:worker/replica:0/task:0")
    with pytest.raises(errors.UnavailableError, match="/job:worker/replica:0/task:0"):
        elsewhere.get_status(timeout=3)


def test_non_loopback_address_without_token_refuses_to_start():
    with pytest.raises(errors.PermissionDeniedError, match="without a cluster token") as info:
        Server({"worker": ["0.0.0.0:0"]}, start=False)
    assert "insecure=True" in str(info.value)


def test_bind_policy_allows_tokens_loopback_and_explicit_insecure():
    security.check_bind_policy("0.0.0.0:2222", "secret", insecure=False)
    security.check_bind_policy("0.0.0.0:2222", None, insecure=True)
    security.check_bind_policy("localhost:2222", None, insecure=False)
    security.check_bind_policy("[::1]:2222", None, insecure=False)
    assert not security.is_loopback("10.1.2.3")


def test_join_returns_once_another_thread_stops_the_server(make_server):
    import threading

    server = make_server()
    stopper = threading.Timer(0.1, server.stop)
    stopper.start()
    server.join()
    stopper.join()
    assert "stopped" in repr(server)


def test_create_local_server_is_also_a_static_method(client):
    with Server.create_local_server() as server:
        assert client.worker(server.target).get_status(timeout=10)["task"] == \
            "/job:localhost/replica:0/task:0"


def test_an_engine_that_fails_releases_the_port(make_server):
    port = free_ports(1)[0]

    def broken(task):
        raise RuntimeError("engine exploded")

    with pytest.raises(RuntimeError, match="engine exploded"):
        make_server({"w": [f"localhost:{port}"]}, engine_factory=broken)
    assert make_server({"w": [f"localhost:{port}"]}).target.endswith(f":{port}")
