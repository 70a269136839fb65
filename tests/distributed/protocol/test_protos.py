"""The committed generated code is what `python -m tfteach.distributed.protocol.protos.regen_cluster` makes."""
import subprocess
import sys
from pathlib import Path

import pytest

from tfteach.distributed.protocol.protos import regen_cluster as regen


def test_regen_is_one_command_and_the_committed_code_is_current(tmp_path):
    """Run in a fresh process: protoc's C++ core must not share a process with TensorFlow's
    protobuf (the conformance tests import TensorFlow into pytest's process)."""
    pytest.importorskip("grpc_tools")
    result = subprocess.run([sys.executable, "-m", "tfteach.distributed.protocol.protos.regen_cluster",
                             "--out", str(tmp_path)], capture_output=True, text=True,
                            cwd=Path(regen.__file__).parents[4], timeout=60)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in tmp_path.glob("*.py")) == sorted(regen.GENERATED)
    for name in regen.GENERATED:
        assert (regen.PROTO_DIR / name).read_text() == (tmp_path / name).read_text(), (
            f"{name} is stale: run python -m tfteach.distributed.protocol.protos.regen_cluster")


def test_generated_modules_import_relative_to_the_package():
    from tfteach.distributed.protocol.protos import tfteach_cluster_pb2_grpc as pb_grpc

    module = pb_grpc.tfteach__cluster__pb2
    assert module.__name__ == "tfteach.distributed.protocol.protos.tfteach_cluster_pb2"


def test_importing_the_package_does_not_load_grpc():
    # grpc and the cluster's messages load with the first Server or remote Session; protobuf
    # itself may load (TF's file formats in tfteach.framework use it, a few ms).
    code = ("import sys, tfteach.distributed; print(sorted(m for m in sys.modules "
            "if m.startswith(('grpc', 'tfteach.distributed.protocol.protos.'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=Path(regen.__file__).parents[4], timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


def test_distributed_never_imports_notebook_or_ipywidgets():
    code = ("import sys, tfteach.distributed.local.local_cluster, tfteach.distributed.service.grpc_server, "
            "tfteach.distributed.local.task_registry, tfteach.distributed.local.server_cli; "
            "print(sorted(m for m in sys.modules if m.startswith(('tfteach.notebook', "
            "'ipywidgets', 'IPython'))))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=Path(regen.__file__).parents[4], timeout=60)
    assert result.stdout.strip() == "[]", result.stderr
