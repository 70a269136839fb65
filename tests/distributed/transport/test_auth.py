"""Every RPC needs the cluster token; the token never shows; TLS works with a real cert."""
import shutil
import subprocess

import pytest

from tfteach import errors
from tfteach.distributed.transport import security
from tfteach.distributed.client.client import ClusterClient

TOKEN = "s3cret-token-for-tests"


def test_call_without_token_is_unauthenticated(make_server, client):
    server = make_server(token=TOKEN)
    with pytest.raises(errors.UnauthenticatedError, match="rejected the call") as info:
        client.worker(server.target, "/job:local/replica:0/task:0").get_status(timeout=10)
    assert "TFTEACH_CLUSTER_TOKEN" in str(info.value)


def test_call_with_wrong_token_is_unauthenticated(make_server):
    server = make_server(token=TOKEN)
    wrong = ClusterClient("not-" + TOKEN)
    try:
        with pytest.raises(errors.UnauthenticatedError):
            wrong.worker(server.target).get_status(timeout=10)
    finally:
        wrong.close()


def test_every_method_is_guarded(make_server):
    import grpc
    from dist_helpers import all_methods

    server = make_server(token=TOKEN)
    channel = grpc.insecure_channel(server.target[len("grpc://"):])
    try:
        for path, streaming in all_methods():
            call = (channel.unary_stream if streaming else channel.unary_unary)(path)
            with pytest.raises(grpc.RpcError) as info:
                result = call(b"", timeout=10, metadata=(("tfteach-token", "wrong"),))
                list(result) if streaming else None
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED, path
    finally:
        channel.close()


def test_right_token_passes(make_server):
    server = make_server(token=TOKEN)
    right = ClusterClient(TOKEN)
    try:
        assert right.worker(server.target).get_status(timeout=10)["task"]
    finally:
        right.close()


def test_token_comes_from_the_environment(make_server, monkeypatch):
    monkeypatch.setenv(security.TOKEN_ENV, TOKEN)
    server = make_server()
    env_client = ClusterClient.from_env()
    try:
        assert env_client.worker(server.target).get_status(timeout=10)["task"]
    finally:
        env_client.close()
    with pytest.raises(errors.UnauthenticatedError):
        ClusterClient().worker(server.target).get_status(timeout=10)


def test_token_is_in_no_repr_or_error(make_server):
    server = make_server(token=TOKEN)
    client = ClusterClient(TOKEN)
    try:
        texts = [repr(server), str(server), repr(client), repr(client.worker(server.target)),
                 repr(server.engine), repr(server.engine.task)]
        try:
            ClusterClient("wrong").worker(server.target).get_status(timeout=10)
        except errors.OpError as err:
            texts.append(str(err))
        assert all(TOKEN not in text for text in texts)
    finally:
        client.close()


def _self_signed(tmp_path):
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


def test_tls_server_talks_to_a_client_that_trusts_its_cert(make_server, tmp_path):
    cert, key = _self_signed(tmp_path)
    server = make_server(tls=security.TLSConfig(cert=cert, key=key), token=TOKEN)
    tls_client = ClusterClient(TOKEN, tls=security.TLSConfig(ca=cert))
    try:
        assert tls_client.worker(server.target).get_status(timeout=10)["task"]
    finally:
        tls_client.close()


def test_plaintext_client_cannot_talk_to_tls_server(make_server, tmp_path):
    cert, key = _self_signed(tmp_path)
    server = make_server(tls=security.TLSConfig(cert=cert, key=key))
    with pytest.raises(errors.UnavailableError):
        ClusterClient().worker(server.target).get_status(timeout=3)


def test_tls_paths_come_from_the_environment(make_server, tmp_path, monkeypatch):
    cert, key = _self_signed(tmp_path)
    monkeypatch.setenv(security.TLS_CERT_ENV, cert)
    monkeypatch.setenv(security.TLS_KEY_ENV, key)
    monkeypatch.setenv(security.TLS_CA_ENV, cert)
    server = make_server()
    env_client = ClusterClient.from_env()
    try:
        assert env_client.worker(server.target).get_status(timeout=10)["task"]
    finally:
        env_client.close()


def test_a_token_set_after_a_refused_session_is_heard_on_the_next(monkeypatch):
    """The learner's path in lesson 11: a session without the token is refused; they set
    TFTEACH_CLUSTER_TOKEN and open a new session to the same server, which now runs."""
    import tfteach as tf

    monkeypatch.delenv(security.TOKEN_ENV, raising=False)
    from tfteach.distributed.transport.processes import free_ports

    spec = tf.train.ClusterSpec({"local": [f"localhost:{free_ports(1)[0]}"]})
    server = tf.train.Server(spec, job_name="local", task_index=0, token=TOKEN)
    with server, tf.Graph().as_default():
        doubled = tf.constant(21.0) * 2.0
        with tf.Session(server.target) as sess, pytest.raises(errors.UnauthenticatedError):
            sess.run(doubled)
        monkeypatch.setenv(security.TOKEN_ENV, TOKEN)
        with tf.Session(server.target) as sess:
            assert sess.run(doubled) == 42.0
        monkeypatch.setenv(security.TOKEN_ENV, "not-" + TOKEN)
        with tf.Session(server.target) as sess, pytest.raises(errors.UnauthenticatedError):
            sess.run(doubled)
