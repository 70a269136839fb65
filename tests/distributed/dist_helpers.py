"""Helpers for the cluster tests, and an engine that shows a task's settings and errors.

Tasks load the engine by name (``TFTEACH_ENGINE=dist_helpers:ReportingEngine``) with this
directory on PYTHONPATH.
"""
from __future__ import annotations

import _thread
import contextlib
import json
import os
import signal
import threading

from tfteach import errors
from tfteach.distributed.engine.probe_engine import ProbeEngine

ENGINE = "dist_helpers:ReportingEngine"
PROBE_ENGINE = "tfteach.distributed.engine.probe_engine:ProbeEngine"
TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
NOBODY = 65534


def as_user(argv: list[str], uid: int = NOBODY) -> list[str]:
    """``argv`` run as ``uid`` (its group too, no supplementary groups) through setpriv,
    which changes user after exec: ``subprocess.run(user=...)`` forks this multi-threaded
    process and changes user before exec, and its child once crashed there."""
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *argv]


class ReportingEngine(ProbeEngine):
    """Shows its TFTEACH_* settings in its device description; RegisterGraph of
    ``{"raise": class name, "message": ..., "hint": ...}`` raises that error."""

    def get_status(self):
        devices = super().get_status()
        settings = {name: os.environ.get(name) for name in
                    ("TFTEACH_VIRTUAL_GPUS", "TFTEACH_DEVICE_SPEED", "TFTEACH_ENGINE")}
        devices[0]["physical_device_desc"] = json.dumps(settings)
        return devices

    def register_graph(self, graph_def, config, session_handle):
        request = json.loads(graph_def or b"{}")
        if request.get("raise") == "ZeroDivisionError":
            return 1 // 0
        if "raise" in request:
            cls = getattr(errors, request["raise"])
            raise cls(request["message"], hint=request.get("hint"))
        return super().register_graph(graph_def, config, session_handle)


def tfteach_segments() -> set[str]:
    from tfteach.distributed.transport import shm

    return set(shm.list_segments())


def all_methods() -> list[tuple[str, bool]]:
    """``(path, server_streaming)`` of every RPC of both services."""
    from tfteach.distributed.protocol.protos import tfteach_cluster_pb2 as pb

    return [(f"/{service.full_name}/{method.name}", method.server_streaming)
            for service in pb.DESCRIPTOR.services_by_name.values()
            for method in service.methods]


def port_is_free(port: int) -> bool:
    """Whether a new server could listen on ``port`` now. SO_REUSEADDR, as grpc's servers
    set it: a connection of the old server left in TIME_WAIT does not hold the port, a
    socket still listening does."""
    import socket

    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def read_exactly(sock, nbytes: int) -> bytes:
    """``nbytes`` from ``sock`` (an assertion fails if it closes first)."""
    data = b""
    while len(data) < nbytes:
        chunk = sock.recv(nbytes - len(data))
        assert chunk, "closed early"
        data += chunk
    return data


class StuckOnCloseEngine(ProbeEngine):
    """An engine whose close never returns (a stand-in for an RPC thread that hangs)."""

    def close(self) -> None:
        import time

        time.sleep(3600)


@contextlib.contextmanager
def ctrl_c_after(seconds: float = 1.0, again_every: float = 1.0, presses: int = 10):
    """Ctrl-C in the main thread ``seconds`` into the block, pressed again every
    ``again_every`` s (at most ``presses`` times) until the block ends, as a learner presses
    it again: on a heavily loaded machine a first simulated press was once lost."""
    handler = signal.getsignal(signal.SIGINT)
    assert handler is signal.default_int_handler, (
        f"SIGINT's handler is {handler!r}, not Python's own: a simulated Ctrl-C would "
        "not raise KeyboardInterrupt")
    done = threading.Event()

    def press() -> None:
        if done.wait(seconds):
            return
        for _ in range(presses):
            _thread.interrupt_main()
            if done.wait(again_every):
                return

    presser = threading.Thread(target=press, daemon=True)
    presser.start()
    try:
        yield
    finally:
        done.set()
        presser.join()
