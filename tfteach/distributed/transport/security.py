"""Who may talk to a task: the cluster token, bind addresses and optional TLS.

- Token: ``TFTEACH_CLUSTER_TOKEN`` in the environment (never a command-line argument, never
  in a repr or a log line). Clients send it as ``tfteach-token`` metadata; every RPC passes
  ``TokenInterceptor``, which answers UNAUTHENTICATED otherwise. One check,
  ``token_allows``, serves every way into a task: gRPC (the interceptor), the lane's hello
  (``lane_server``) and the in-process master (``client.in_process_master``).
- A call without the token costs the task no RPC thread and none of its request: gRPC
  Python runs interceptors on the server's polling thread when the call's headers arrive,
  before any message is read. Answering from there is possible only as UNIMPLEMENTED
  (interceptor returns None) or UNKNOWN (it raises), which would hide the cause from the
  caller, so the interceptor returns a stream-stream handler that answers UNAUTHENTICATED
  without ever asking for a request message (a unary handler would first read the whole
  request on a pool thread: a caller that never finishes sending, or sends 1 GB, would
  hold a thread or the memory). That handler runs on a one-thread pool of its own
  (``experimental_thread_pool``, honoured by gRPC's sync server; one per process), for microseconds, so
  refused calls never wait for, nor delay, the task's RPC threads.
- Binding: a server binds only its own address from the cluster spec (``localhost`` ->
  ``127.0.0.1``). A non-loopback address without a token needs ``insecure=True``.
- TLS: ``TFTEACH_TLS_CERT`` + ``TFTEACH_TLS_KEY`` (server) and ``TFTEACH_TLS_CA`` (client
  trust root), or a ``TLSConfig`` passed explicitly.
"""
from __future__ import annotations

import hmac
import ipaddress
import os
import socket
from concurrent import futures
from dataclasses import dataclass
from typing import Any, Callable

import grpc

from tfteach import errors
from tfteach.i18n import tr

TOKEN_ENV = "TFTEACH_CLUSTER_TOKEN"
TOKEN_METADATA_KEY = "tfteach-token"
TLS_CERT_ENV, TLS_KEY_ENV, TLS_CA_ENV = "TFTEACH_TLS_CERT", "TFTEACH_TLS_KEY", "TFTEACH_TLS_CA"
MAX_PORT = 65535


def token_from_env() -> str | None:
    """The cluster token from the environment (``None`` when unset or empty)."""
    return os.environ.get(TOKEN_ENV) or None


def token_allows(expected: str | bytes | None, sent: str | bytes | None) -> bool:
    """Whether a caller that sent ``sent`` may call a task whose token is ``expected``:
    any caller of a task without one, else only the same token (compared in constant time,
    ``hmac.compare_digest``, so the time taken says nothing of how much of it was right)."""
    if not expected:
        return True
    return hmac.compare_digest(_token_bytes(expected), _token_bytes(sent or b""))


def _token_bytes(token: str | bytes) -> bytes:
    return token.encode("utf-8") if isinstance(token, str) else bytes(token)


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``) -> ``(host, port)``."""
    host, sep, port = address.rpartition(":")
    if not sep or not (port.isascii() and port.isdigit()):
        raise errors.InvalidArgumentError(
            f"Task address {address!r} is not of the form host:port",
            hint=tr("Write addresses like 'localhost:2222' or '10.0.0.5:2222' in the "
                    "ClusterSpec."))
    if int(port) > MAX_PORT:        # gRPC would bind the port modulo 65536
        raise errors.InvalidArgumentError(
            f"Task address {address!r} has port {int(port)}, but ports go from 0 to "
            f"{MAX_PORT}",
            hint=tr("Pick a port between 1024 and {largest} for {address} in the ClusterSpec "
                    "(0 lets the server choose a free one).", largest=MAX_PORT,
                    address=address))
    return host.strip("[]"), int(port)


def bind_host(host: str) -> str:
    """The host to bind or dial: ``localhost`` becomes ``127.0.0.1``."""
    return "127.0.0.1" if host.lower() == "localhost" else host


def grpc_address(host: str, port: int) -> str:
    """``host:port`` as gRPC wants it (IPv6 literals in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only loopback addresses (``localhost``, 127.x, ::1)."""
    host = bind_host(host)
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def check_bind_policy(address: str, token: str | None, insecure: bool) -> None:
    """Refuse to serve a non-loopback address without a token unless ``insecure``."""
    host, _ = split_address(address)
    if token or insecure or is_loopback(host):
        return
    raise errors.PermissionDeniedError(
        f"Refusing to start a server on {address} without a cluster token: anyone who can "
        "reach that address could run code in this process.",
        hint=tr("Set {variable} to the same secret in every task's environment, or pass "
                "insecure=True (tfteach-server --insecure) on a trusted network.",
                variable=TOKEN_ENV))


class TokenInterceptor(grpc.ServerInterceptor):
    """Answers UNAUTHENTICATED to every call whose ``tfteach-token`` is missing or wrong,
    without reading its request (see the module docstring)."""

    def __init__(self, token: str, task: str) -> None:
        self._token = token
        self._task = task
        self._denied = grpc.stream_stream_rpc_method_handler(_Deny(
            f"missing or wrong cluster token for task {task}"))

    def __repr__(self) -> str:
        return f"TokenInterceptor(task={self._task!r})"

    def intercept_service(self, continuation: Callable, handler_call_details: Any) -> Any:
        sent = b""
        for key, value in handler_call_details.invocation_metadata or ():
            if key == TOKEN_METADATA_KEY:
                sent = value
        if token_allows(self._token, sent):
            return continuation(handler_call_details)
        return self._denied


class _Deny:
    """The denied calls' behaviour: UNAUTHENTICATED, on one thread of its own, with no
    request read (the request iterator is never touched)."""

    experimental_thread_pool = futures.ThreadPoolExecutor(1, "tfteach-deny")  # one per process

    def __init__(self, details: str) -> None:
        self.details = details

    def __call__(self, requests: Any, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, self.details)


@dataclass(frozen=True)
class TLSConfig:
    """Paths of PEM files: the server's certificate and key, and the clients' trust root."""

    cert: str | None = None
    key: str | None = None
    ca: str | None = None

    @classmethod
    def from_env(cls) -> "TLSConfig | None":
        """The TLS paths from ``TFTEACH_TLS_*`` (``None`` when none is set)."""
        paths = {name: os.environ.get(env) or None for name, env in
                 (("cert", TLS_CERT_ENV), ("key", TLS_KEY_ENV), ("ca", TLS_CA_ENV))}
        return cls(**paths) if any(paths.values()) else None

    def server_credentials(self) -> grpc.ServerCredentials:
        """Credentials for a server (needs ``cert`` and ``key``)."""
        if not (self.cert and self.key):
            raise errors.InvalidArgumentError(
                "TLS needs both a certificate and a key to serve",
                hint=tr("Set {cert} and {key} to PEM files.", cert=TLS_CERT_ENV,
                        key=TLS_KEY_ENV))
        return grpc.ssl_server_credentials([(_read(self.key), _read(self.cert))])

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """Credentials for a client (trusting ``ca``, else the server cert, else the system)."""
        root = self.ca or self.cert
        return grpc.ssl_channel_credentials(root_certificates=_read(root) if root else None)


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
