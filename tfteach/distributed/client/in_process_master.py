"""TF's LocalMaster: a session whose master is a ``Server`` of this very process runs its
steps by calling that server's engine, not through gRPC.

TF's ``GrpcSession`` does the same (``LocalMaster::Lookup``) unless its config sets
``rpc_options.use_rpc_for_inprocess_master``: a TF program's usual shape, a
``tf.train.Server`` in the client process as the master, then spends no RunStep round
trip and no copy of its feeds and fetches between client and master.

State: ``_servers = {address key: (weak reference to a Server, token)}``, the started
servers of this process (``Server.start`` registers, ``Server.stop`` forgets; a server
collected without ``stop`` serves no more). Rules: only RunStep takes this path
(sessions are created, extended and closed over gRPC, where the token is checked), only
for a client holding the server's token (or a server without one), only without a
deadline of its own. Ctrl-C while the step runs aborts it on every task, as cancelling a
RunStep call does. Feeds reach the master as the client's arrays, as a local session's do,
and fetches come back as the master made them; string tensors both ways as the wire would
give them (arrays of ``bytes``).
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Mapping, Sequence

import numpy as np

from tfteach.distributed.contract.engine_api import Cancellation, RunResult, as_run_result, serving
from tfteach.distributed.transport import security, wire

_LOOPBACK = ("localhost", "127.0.0.1", "::1", "0.0.0.0", "")
_lock = threading.Lock()
_servers: dict[str, tuple[weakref.ref, str]] = {}


def _key(address: str) -> str:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    return f"localhost:{port}" if host in _LOOPBACK else f"{host}:{port}"


def register(address: str, server: Any, token: str | None) -> None:
    """``server`` (of this process; its ``engine`` is None once stopped) serves
    ``address`` and checks ``token``."""
    with _lock:
        _servers[_key(address)] = (weakref.ref(server), token or "")


def forget(address: str, server: Any) -> None:
    """``server`` stopped serving ``address``."""
    with _lock:
        found = _servers.get(_key(address))
        if found is not None and found[0]() in (server, None):
            del _servers[_key(address)]


def find(address: str, token: str) -> "weakref.ref | None":
    """A weak reference to the server of this process at ``address`` that a client holding
    ``token`` may call directly (its ``engine`` is None once it stopped); None if there is
    none (the call goes through gRPC)."""
    found = _servers.get(_key(address))
    if found is None or not security.token_allows(found[1], token):
        return None
    return found[0]


def lookup(address: str, token: str) -> Any:
    """The engine of a server of this process at ``address`` that a client holding
    ``token`` may call directly; None if there is none."""
    found = find(address, token)
    server = None if found is None else found()
    return None if server is None else server.engine


def run_step(engine: Any, session_handle: str, feeds: Mapping[str, Any],
             fetches: Sequence[str], targets: Sequence[str], options: bytes) -> RunResult:
    """RunStep on ``engine``, on this thread, as the RunStep service would run it."""
    feeds = {name: _as_received(value) for name, value in feeds.items()}
    cancellation = Cancellation()
    with serving(cancellation):
        try:
            result = as_run_result(engine.run_step(session_handle, feeds, list(fetches),
                                                   list(targets), options))
        except Exception:
            raise       # the master has already cleaned the step up
        except BaseException:   # Ctrl-C: abort the step on every task, as a cancelled call
            cancellation.cancel()
            raise
    tensors = {name: _as_received(value) for name, value in result.tensors.items()}
    return RunResult(tensors, result.metadata)


def _as_received(value: Any) -> Any:
    """``value`` as it would arrive over gRPC: a string tensor as the wire decodes one
    (an object array of ``bytes``), any other array as it is."""
    array = np.asarray(value)
    if array.dtype.kind not in "OSU":
        return array
    header, content = wire.encode(array)
    return wire.decode(header, np.frombuffer(content, dtype=np.uint8))
