"""Transport benchmark: how fast tensors move between two task processes.

Measures, in one run on this machine:
- LocalCluster(ps=1, workers=2) ready time (all tasks answer GetStatus), with the
  probe engine (transport only) and with the default (graph) engine;
- a 1 MiB and a 64 MiB float32 tensor pulled by worker 1 from worker 0 through RecvTensor,
  via shared memory and via the chunked gRPC stream (timed inside worker 1);
- the baseline: a plain gRPC server process streaming the same bytes in the same 4 MiB
  chunks to this process, which assembles them into a preallocated buffer.
Prints a table of throughputs with ratios against the baseline.

    python benchmarks/bench_transport.py [--repeats 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import grpc  # noqa: E402
import numpy as np  # noqa: E402

from tfteach.distributed.client.client import ClusterClient  # noqa: E402
from tfteach.distributed.local.local_cluster import LocalCluster  # noqa: E402
from tfteach.distributed.engine.probe_engine import run_probe  # noqa: E402
from tfteach.distributed.transport.wire import CHUNK_BYTES  # noqa: E402

PROBE = "tfteach.distributed.engine.probe_engine:ProbeEngine"
MiB = 1 << 20
SIZES = (1 * MiB, 64 * MiB)
OPTIONS = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]

RAW_SERVER = f"""
import grpc, sys
from concurrent import futures
CHUNK = {CHUNK_BYTES}
blobs = {{}}
def stream(request, context):
    n = int(request)
    view = memoryview(blobs.setdefault(n, bytes(n)))
    for start in range(0, n, CHUNK):
        yield bytes(view[start:start + CHUNK])
handler = grpc.method_handlers_generic_handler(
    "bench.Raw", {{"Stream": grpc.unary_stream_rpc_method_handler(stream)}})
server = grpc.server(futures.ThreadPoolExecutor(4), options={OPTIONS!r})
server.add_generic_rpc_handlers((handler,))
print(server.add_insecure_port("127.0.0.1:0"), flush=True)
server.start()
server.wait_for_termination()
"""


def ready_time(repeats: int, engine: str | None) -> float:
    """Median seconds from LocalCluster() to all three tasks answering."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        cluster = LocalCluster(ps=1, workers=2, engine=engine)
        times.append(time.perf_counter() - start)
        cluster.close()
    return statistics.median(times)


def tfteach_seconds(cluster: LocalCluster, nbytes: int, use_shm: bool, repeats: int) -> float:
    """Median seconds for worker 1 to pull ``nbytes`` from worker 0 (timed in worker 1)."""
    client = ClusterClient(cluster.token)
    producer = client.worker(cluster.target("worker", 0))
    consumer = client.worker(cluster.target("worker", 1))
    times = []
    for step in range(1, repeats + 2):
        run_probe(producer, step, {"probe": "produce", "key": "t", "shape": [nbytes // 4],
                                   "dtype": "float32"})
        result = run_probe(consumer, step, {"probe": "fetch", "peer": producer.address,
                                            "key": "t", "shm": use_shm})
        assert int(result["nbytes"]) == nbytes
        times.append(float(result["seconds"]))
    client.close()
    return statistics.median(times[1:])        # the first pull warms the channel up


def raw_grpc_seconds(nbytes: int, repeats: int) -> float:
    """Median seconds to stream ``nbytes`` from a plain gRPC server process."""
    server = subprocess.Popen([sys.executable, "-c", RAW_SERVER], stdout=subprocess.PIPE,
                              text=True)
    try:
        port = int(server.stdout.readline())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=OPTIONS)
        call = channel.unary_stream("/bench.Raw/Stream")
        times = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            buffer = np.empty(nbytes, dtype=np.uint8)
            offset = 0
            for chunk in call(str(nbytes).encode(), wait_for_ready=True):
                buffer[offset:offset + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
                offset += len(chunk)
            times.append(time.perf_counter() - start)
            assert offset == nbytes
        channel.close()
        return statistics.median(times[1:])
    finally:
        server.kill()
        server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description="tfteach transport benchmark")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"tfteach transport benchmark ({len(__import__('os').sched_getaffinity(0))} cores, "
          "loopback, median of repeats)\n")
    for label, engine in (("probe engine", PROBE), ("default engine", None)):
        print(f"LocalCluster(ps=1, workers=2) ready in {ready_time(3, engine):.2f} s "
              f"({label})")
    print()
    rows = []
    with LocalCluster(ps=0, workers=2, engine=PROBE) as cluster:
        for nbytes in SIZES:
            base = raw_grpc_seconds(nbytes, args.repeats)
            rows.append((nbytes, "raw gRPC stream (baseline)", base, base))
            for label, use_shm in (("tfteach RecvTensor, stream", False),
                                   ("tfteach RecvTensor, shm", True)):
                rows.append((nbytes, label, tfteach_seconds(cluster, nbytes, use_shm,
                                                            args.repeats), base))
    print(f"{'size':>7}  {'path':<28} {'ms':>8} {'MB/s':>8} {'vs baseline':>12}")
    for nbytes, label, seconds, base in rows:
        print(f"{nbytes // MiB:>4} MiB  {label:<28} {seconds * 1e3:>8.2f} "
              f"{nbytes / seconds / 1e6:>8.0f} {base / seconds:>11.2f}x")


if __name__ == "__main__":
    main()
