"""Same host is proven, not guessed: the shared-memory probe, and refused segments.

A host key (``shm.host_key``: hostname, boot id, /dev/shm's device) is only a guess.
Network namespaces that share one hostname and /dev/shm (Mininet-style labs, some
container set-ups) agree on it, yet the task sees the caller's connection come from an
address that is not its own and cannot check the calling process. So a client uses shared
memory, and the lane, with a task only once the task has proven, on the client's channel to
it, that it reaches the client's segments:
- The client writes a random nonce into a probe segment of its own (``Probe``) and names
  it, with its host key, in a GetStatus request. The task reads it only if it takes the
  caller as one of its host (``shm_callers.Caller``: the claim, the connection's address,
  the segment is the calling process's), and answers the nonce (``answer``: ``shm_proof``).
  The client compares it (``Probe.proven``); ``client.route.TaskRoute`` keeps the
  outcome per task, and a GetStatus answer that proves nothing names no host key.
- A task that still does not take a request's segments (``refuse_segments``) answers
  FailedPreconditionError marked ``REFUSED_KEY`` before it reads any tensor; the client
  sends the request again with every tensor inline and uses no shared memory with that
  task from then on (``refused``). It is never DataLossError for a path that could have
  worked.
"""
from __future__ import annotations

import hmac
import secrets
from typing import Any, Iterable

from tfteach import errors
from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb
from tfteach.distributed.transport import shm
from tfteach.distributed.transport.shm_callers import Caller
from tfteach.i18n import tr

NONCE_BYTES = 16
REFUSED_KEY = "tfteach-shm-refused"     # trailing metadata: send the request again inline


class Probe:
    """A probe segment of this process holding a random nonce (the client's side)."""

    def __init__(self) -> None:
        self.nonce = secrets.token_bytes(NONCE_BYTES)
        self.name = ""
        if shm.available():
            try:
                self.name = shm.export(memoryview(self.nonce))
            except OSError:     # /dev/shm full or read-only: nothing is proven
                pass

    def __repr__(self) -> str:
        return f"Probe({self.name!r})"

    def request(self) -> pb.GetStatusRequest:
        """A GetStatus request that asks the task to read the probe."""
        if not self.name:
            return pb.GetStatusRequest()
        return pb.GetStatusRequest(shm_host=shm.host_key(), shm_probe=self.name)

    def proven(self, response: pb.GetStatusResponse) -> bool:
        """Whether the task answered the nonce; the probe segment is removed."""
        self.close()
        return bool(self.name) and hmac.compare_digest(response.shm_proof, self.nonce)

    def close(self) -> None:
        """Remove the probe segment (the task took it, or will never read it)."""
        if self.name:
            shm.release(self.name)


def answer(request: pb.GetStatusRequest, caller: Caller) -> bytes:
    """The task's side: the nonce in the caller's probe segment if the caller shares this
    host (module docstring), else b""."""
    if not request.shm_probe or not caller.shares_host(request.shm_host):
        return b""
    nonce = bytearray(NONCE_BYTES)
    try:
        caller.owner_of(request.shm_probe)
        shm.take(request.shm_probe, NONCE_BYTES, memoryview(nonce))
    except errors.OpError:
        return b""
    return bytes(nonce)


def refuse_segments(named: Iterable[pb.NamedTensor]) -> None:
    """Raise the refusal (``REFUSED_KEY``) if one of ``named``, tensors of a caller that
    does not share this host, names a shared-memory segment."""
    for item in named:
        if item.tensor.header.shm_name:
            err = errors.FailedPreconditionError(
                f"Refusing tensor {item.name!r} in shared-memory segment "
                f"{item.tensor.header.shm_name!r}: the caller does not share this task's "
                "/dev/shm",
                hint=tr("tfteach's clients send such a tensor again inline; a client of "
                        "your own must send tensors inline to a task of another host."))
            err.rpc_metadata = ((REFUSED_KEY, "1"),)
            raise err


def refused(error: Any) -> bool:
    """Whether a failed call was a task refusing the request's segments (send it again
    inline)."""
    return REFUSED_KEY in (getattr(error, "rpc_trailing", None) or {})
