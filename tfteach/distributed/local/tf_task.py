"""TensorFlow's own servers as LocalCluster tasks (``LocalCluster(backend="tensorflow")``).

``python -m tfteach.distributed.local.tf_task --cluster cluster.json --job ps --task 0`` runs one
real ``tf.train.Server`` (``tensorflow.compat.v1``) in this process until SIGINT/SIGTERM or
until the owner named in ``TFTEACH_PARENT_PID`` dies (the same watch as ``tfteach-server``),
then leaves at once with status 0 (TF's grpc server has no clean shutdown). Before TF is
imported the task drops ``GRPC_VERBOSITY`` (importing ``tfteach.distributed`` sets it to
ERROR, which silences TF's own log, ``Started server with target: ...`` included), so the
task's log holds what a TF server prints; ``TF_CPP_MIN_LOG_LEVEL`` quiets it.

The owner's side never imports TensorFlow: ``require_tensorflow`` only looks for it, and
``StatusClient`` asks a task for TF's ``/tensorflow.WorkerService/GetStatus`` with plain
bytes (an empty request; the answer's ``DeviceAttributes`` decoded by hand). TF's servers
take no cluster token: any process on this machine may call them, as in TensorFlow.
State: ``StatusClient``'s channels.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Iterator, Mapping, Sequence

import grpc

from tfteach import errors
from tfteach.i18n import tr

TENSORFLOW = "tensorflow"
GET_STATUS = "/tensorflow.WorkerService/GetStatus"
_CHANNEL_OPTIONS = (("grpc.initial_reconnect_backoff_ms", 50),
                    ("grpc.min_reconnect_backoff_ms", 50),
                    ("grpc.max_reconnect_backoff_ms", 500),
                    ("grpc.enable_retries", 0))
_NOT_YET = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def tensorflow_missing(what: str) -> errors.FailedPreconditionError:
    """The error for ``what`` when TensorFlow is not installed: it says how to install it."""
    return errors.FailedPreconditionError(
        tr("{what} needs TensorFlow, which is not installed in this Python ({python}).",
           what=what, python=sys.executable),
        hint=tr('install it with `pip install "tfteach[conformance]"` (TensorFlow and tf-keras), then '
                "restart the kernel."))


def require_tensorflow(what: str) -> None:
    """Raise FailedPreconditionError, saying how to install it, if TensorFlow is missing."""
    try:
        found = importlib.util.find_spec("tensorflow")
    except (ImportError, ValueError):     # an import hook that refuses it: missing too
        found = None
    if found is None:
        raise tensorflow_missing(what)


def task_argv(cluster_file: str, job: str, task: int) -> list[str]:
    """The command line of one TensorFlow task."""
    return [sys.executable, "-m", __name__, "--cluster", cluster_file, "--job", job,
            "--task", str(task)]


class StatusClient:
    """GetStatus calls to TensorFlow servers, one channel per address."""

    def __init__(self) -> None:
        self._channels: dict[str, grpc.Channel] = {}

    def _call(self, address: str, timeout: float) -> grpc.Future:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = grpc.insecure_channel(address, _CHANNEL_OPTIONS)
        method = channel.unary_unary(GET_STATUS)
        return method.future(b"", timeout=timeout, wait_for_ready=True)

    def probe_tasks(self, targets: Mapping[str, str], timeout: float) -> dict[str, list]:
        """GetStatus on every ``{task_name: address}`` in parallel, each waiting at most
        ``timeout`` s; return ``{task_name: devices}`` of those that answered."""
        calls = {name: self._call(address, timeout) for name, address in targets.items()}
        answers = {}
        for name, call in calls.items():
            try:
                answers[name] = parse_devices(call.result())
            except grpc.RpcError as err:
                if err.code() not in _NOT_YET:
                    raise errors.UnavailableError(
                        f"Task {name} ({targets[name]}) answered GetStatus with "
                        f"{err.code().name}: {err.details()}",
                        hint=tr("Is a TensorFlow server listening there? Its log tells.")
                    ) from None
        return answers

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()


def parse_devices(response: bytes) -> list[dict[str, Any]]:
    """The devices of TF's ``GetStatusResponse`` (``repeated DeviceAttributes = 1``) as
    ``{"name", "device_type", "memory_limit"}`` (TF's fields 1, 2 and 4)."""
    devices = []
    for number, value in _fields(response):
        if number == 1:
            attrs = dict(_fields(value))
            devices.append({"name": attrs.get(1, b"").decode(),
                            "device_type": attrs.get(2, b"").decode(),
                            "memory_limit": int(attrs.get(4, 0))})
    return devices


def _fields(data: bytes) -> Iterator[tuple[int, Any]]:
    """``(field number, value)`` of a protobuf message: varints as int, others as bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        kind = key & 7
        if kind == 0:
            value, pos = _varint(data, pos)
        elif kind == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
        elif kind in (1, 5):
            size = 8 if kind == 1 else 4
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ValueError(f"protobuf wire type {kind} at byte {pos}")
        yield key >> 3, value


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def main(argv: Sequence[str] | None = None) -> int:
    """Run one TensorFlow server task until told to stop; see the module doc."""
    os.environ.pop("GRPC_VERBOSITY", None)      # before grpc or TF read it
    from tfteach.distributed.local import server_cli as cli

    args, jobs = cli.parse_args(sys.argv[1:] if argv is None else argv)
    stop = cli.stop_on_signal_or_owner_exit()
    try:
        import tensorflow.compat.v1 as tf

        cluster = tf.train.ClusterSpec(cli.load_cluster(args.cluster, jobs))
        server = tf.train.Server(cluster, job_name=args.job, task_index=args.task)
    except Exception as exc:  # noqa: BLE001 - any failure to start: report it, exit 1
        print(f"Cannot start TensorFlow server: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    while not stop.wait(0.5):
        pass
    print(f"Stopping TensorFlow server {server.target}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(0)     # TF's grpc server cannot stop; leave without joining its threads


if __name__ == "__main__":
    sys.exit(main())
