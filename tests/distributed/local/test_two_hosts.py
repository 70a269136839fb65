"""Two real hosts: network namespaces joined by a veth pair, a task on each, with a token.

Runs only as root with `ip` available (CI runs as root). The namespaces and addresses
(10.231.77.1 and .2) exist only inside this test's own sandbox and are removed afterwards.
Host A runs a worker task; host B runs the host task and the client program. We check the
cluster computes across the two addresses with the token, that a server on a non-loopback
address refuses to start without a token, and that a wrong token is UNAUTHENTICATED.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import uuid

import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

A, B = "10.231.77.1", "10.231.77.2"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def hosts():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make network namespaces")
    tag = uuid.uuid4().hex[:6]
    ns_a, ns_b = f"tft-a-{tag}", f"tft-b-{tag}"
    try:
        _ip("netns", "add", ns_a)
        _ip("netns", "add", ns_b)
        _ip("link", "add", f"va{tag}", "type", "veth", "peer", "name", f"vb{tag}")
        _ip("link", "set", f"va{tag}", "netns", ns_a)
        _ip("link", "set", f"vb{tag}", "netns", ns_b)
        for ns, dev, addr in ((ns_a, f"va{tag}", A), (ns_b, f"vb{tag}", B)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
    except subprocess.CalledProcessError as e:
        pytest.skip(f"cannot make network namespaces here: {e.stderr.decode().strip()}")
    yield ns_a, ns_b
    for ns in (ns_a, ns_b):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _in_ns(ns: str, args: list[str], env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


CLIENT = textwrap.dedent("""
    import sys, numpy as np, tfteach as tf
    spec = tf.train.ClusterSpec({"worker": [sys.argv[1]], "host": [sys.argv[2]]})
    server = tf.train.Server(spec, job_name="host", task_index=0)
    with tf.device("/job:worker/task:0"):
        a = tf.constant([[1.0, 2.0]])
        b = tf.constant([[3.0], [4.0]])
    out = tf.matmul(a, b) + tf.log(100.0 + tf.constant(5.0))
    print("RESULT", tf.Session(server.target).run(out).item())
    server.stop()
""")


def _env(token: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TFTEACH_CLUSTER_TOKEN"}
    env["TFTEACH_VIRTUAL_GPUS"] = "0"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.getcwd(), env.get("PYTHONPATH")]))
    if token:
        env["TFTEACH_CLUSTER_TOKEN"] = token
    return env


def _worker(ns: str, token: str | None) -> subprocess.Popen:
    return _in_ns(ns, ["-m", "tfteach.server", "--ps_hosts=", f"--worker_hosts={A}:7301",
                       "--job_name=worker", "--task_index=0"], _env(token))


def test_cluster_across_two_hosts_with_a_token(hosts):
    ns_a, ns_b = hosts
    worker = _worker(ns_a, "s3cret-token")
    try:
        client = _in_ns(ns_b, ["-c", CLIENT, f"{A}:7301", f"{B}:7302"], _env("s3cret-token"))
        out, _ = client.communicate(timeout=90)
    finally:
        worker.terminate()
        log, _ = worker.communicate(timeout=20)
    assert "RESULT 15.65" in out, out
    assert f"Started server with target: grpc://{A}:7301" in log
    assert "s3cret-token" not in log + out


def test_non_loopback_server_refuses_to_start_without_a_token(hosts):
    ns_a, _ = hosts
    worker = _worker(ns_a, None)
    log, _ = worker.communicate(timeout=60)
    assert worker.returncode != 0
    assert "token" in log.lower() and "--insecure" in log


def test_wrong_token_is_unauthenticated(hosts):
    ns_a, ns_b = hosts
    worker = _worker(ns_a, "right-token")
    try:
        client = _in_ns(ns_b, ["-c", CLIENT, f"{A}:7301", f"{B}:7302"], _env("wrong-token"))
        out, _ = client.communicate(timeout=90)
    finally:
        worker.terminate()
        worker.communicate(timeout=20)
    assert client.returncode != 0
    assert "UnauthenticatedError" in out
