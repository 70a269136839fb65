"""The op families stay in modules a newcomer can read whole.

Every hand-written module of ``tfteach/ops`` is under 450 lines; a module that grows past it
is split by job (docs/ARCHITECTURE.md names each module's job). Generated protobuf modules
are not hand-written and are left out. ``tfteach/distributed`` keeps a different rule: one job
per module and at most 15 modules per room (tests/misc/test_distributed_rooms.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tfteach"
LIMIT = 450


def _modules(folder: str) -> list[Path]:
    return sorted(p for p in (PACKAGE / folder).rglob("*.py")
                  if not p.name.endswith(("_pb2.py", "_pb2_grpc.py")) and not p.name.startswith("regen"))


@pytest.mark.parametrize("folder", ["ops"])
def test_every_module_is_under_the_line_limit(folder):
    modules = _modules(folder)
    assert len(modules) > 5, f"no modules found under tfteach/{folder}"
    too_long = {p.relative_to(PACKAGE).as_posix(): n for p in modules
                if (n := len(p.read_text().splitlines())) >= LIMIT}
    assert too_long == {}, f"split these by job (limit {LIMIT} lines): {too_long}"
