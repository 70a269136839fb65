"""Regenerate ``tfteach_tf_formats_pb2.py`` from ``tfteach_tf_formats.proto``.

Usage: ``python -m tfteach.framework.protos.regen_graph [--out DIR]`` (needs grpcio-tools).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
PROTO_NAME = "tfteach_tf_formats.proto"


def generate(out_dir: Path = PROTO_DIR) -> Path:
    """Run protoc on the .proto into ``out_dir``; return the generated module's path."""
    from grpc_tools import protoc  # imported here: grpcio-tools is a dev-only dependency

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rc = protoc.main(["grpc_tools.protoc", f"-I{PROTO_DIR}", f"--python_out={out_dir}",
                      str(PROTO_DIR / PROTO_NAME)])
    if rc != 0:
        raise RuntimeError(f"protoc failed with exit code {rc}")
    return out_dir / PROTO_NAME.replace(".proto", "_pb2.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=PROTO_DIR, help="output directory")
    args = parser.parse_args(argv)
    print(f"wrote {generate(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
