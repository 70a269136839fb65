"""Regenerate the committed Python modules from ``tfteach_cluster.proto``.

Usage: ``python -m tfteach.distributed.protocol.protos.regen_cluster [--out DIR]`` (needs grpcio-tools).
protoc writes ``import tfteach_cluster_pb2``; we rewrite it to a package-relative import so
the modules import as ``tfteach.distributed.protocol.protos.*`` from anywhere.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
PROTO_NAME = "tfteach_cluster.proto"
GENERATED = ("tfteach_cluster_pb2.py", "tfteach_cluster_pb2_grpc.py")


def generate(out_dir: Path = PROTO_DIR) -> list[Path]:
    """Run protoc on the .proto into ``out_dir``; return the generated files."""
    from grpc_tools import protoc  # imported here: grpcio-tools is a dev-only dependency

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    include = Path(protoc.__file__).resolve().parent / "_proto"
    rc = protoc.main(["grpc_tools.protoc", f"-I{PROTO_DIR}", f"-I{include}",
                      f"--python_out={out_dir}", f"--grpc_python_out={out_dir}",
                      str(PROTO_DIR / PROTO_NAME)])
    if rc != 0:
        raise RuntimeError(f"protoc failed with exit code {rc}")
    grpc_file = out_dir / GENERATED[1]
    text = grpc_file.read_text()
    text = re.sub(r"^import tfteach_cluster_pb2 as", "from . import tfteach_cluster_pb2 as",
                  text, flags=re.M)
    grpc_file.write_text(text)
    return [out_dir / name for name in GENERATED]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PROTO_DIR, help="output directory")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
