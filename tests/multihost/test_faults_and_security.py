"""The tutorial's pair across hosts when things go wrong: a host whose task is killed and
restarted serves the next session; with the cluster token and TLS, a client that has both
computes, one without TLS or with another token is refused, and the token never shows."""
from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]


def pair(hosts, start, tmp_path, env: dict | None = None) -> list:
    """The config.json pair's two workers on hosts 0 and 1, serving."""
    workers = [f"{hosts.address(i)}:2222" for i in (0, 1)]
    (tmp_path / "config.json").write_text(json.dumps({"worker": workers}))
    servers = [start(hosts, task, "config_server.py", task, env=env) for task in (0, 1)]
    for task, server in enumerate(servers):
        server.wait_for(f"Starting server #{task}")
    return servers


def output(client) -> tuple[int, str, str]:
    """Exit status, stdout, and stdout and stderr together."""
    status = client.wait(120)
    return status, client.stdout, client.stdout + client.stderr


def test_a_host_whose_task_is_killed_and_restarted_serves_again(make_hosts, start,
                                                                 tmp_path):
    hosts = make_hosts(3)
    servers = pair(hosts, start, tmp_path)
    assert output(start(hosts, 2, "config_client.py"))[:2] == (0, "238")
    servers[1].kill()                   # SIGKILL: host 1's task is gone
    waiting = start(hosts, 2, "config_client.py")
    time.sleep(1.0)
    assert waiting.popen.poll() is None, waiting.transcript()    # its master waits for it
    start(hosts, 1, "config_server.py", 1).wait_for("Starting server #1")
    assert output(waiting)[:2] == (0, "238")


def self_signed(tmp_path, hosts) -> dict:
    """A certificate for every host's address, as the TLS variables name it."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    names = ",".join(f"IP:{hosts.address(i)}" for i in range(hosts.count))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", str(key), "-out", str(cert), "-subj", "/CN=tfteach-class",
                    "-addext", f"subjectAltName={names}"],
                   check=True, capture_output=True, timeout=60)
    return {"TFTEACH_TLS_CERT": str(cert), "TFTEACH_TLS_KEY": str(key),
            "TFTEACH_TLS_CA": str(cert)}


def test_the_cluster_token_and_tls_across_hosts(make_hosts, start, tmp_path):
    hosts = make_hosts(3)
    tls = self_signed(tmp_path, hosts)
    servers = pair(hosts, start, tmp_path, env=tls)
    clients = {"both": start(hosts, 2, "config_client.py", env=tls),
               "plaintext": start(hosts, 2, "config_client.py"),
               "other token": start(hosts, 2, "config_client.py",
                                    env={**tls, "TFTEACH_CLUSTER_TOKEN": "not-the-token"})}
    seen = {name: output(client) for name, client in clients.items()}
    assert seen["both"][:2] == (0, "238")
    assert seen["plaintext"][0] != 0 and "UnavailableError" in seen["plaintext"][2]
    assert seen["other token"][0] != 0 and "UnauthenticatedError" in seen["other token"][2]
    for server in servers:
        server.kill()
    everything = "".join(text for _, _, text in seen.values()) + \
        "".join(server.transcript() for server in servers)
    assert "multihost-suite-token" not in everything and "not-the-token" not in everything
