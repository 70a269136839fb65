"""``tfteach.distributed`` is split into rooms, one job each, and a room imports only the rooms
below it. Imports under ``if TYPE_CHECKING:`` count here: a type-level cycle is still a cycle
for a reader.

Rooms, lowest first, and the rooms each may import:

=========  ==================================================  ===============================
room       job                                                 may import
=========  ==================================================  ===============================
protocol   protos, limits, status codes, cluster spec, log     (nothing)
transport  security, peer identity, shared memory, lane, bulk  protocol
contract   engine API, step args/results, rendezvous, kernels  protocol
client     ClusterClient, stubs, remote sessions, waiting      protocol, transport, contract
master     master session, partition, phases, NodeDefs         contract, client
engine     graph engine, probe engine                          contract, client, master
service    gRPC servicers and Server                           protocol, transport, contract,
                                                               client
local      LocalCluster, task processes, TF tasks, the CLI     protocol, transport, contract,
                                                               client, service
=========  ==================================================  ===============================

The package's own ``__init__`` (lazy public names) may name any room.
"""
from __future__ import annotations

import ast
import re

from test_layers import PACKAGE, import_cycles, import_graph, module_name

DISTRIBUTED = PACKAGE / "distributed"
MAY_IMPORT = {
    "protocol": set(),
    "transport": {"protocol"},
    "contract": {"protocol"},
    "client": {"protocol", "transport", "contract"},
    "master": {"contract", "client"},
    "engine": {"contract", "client", "master"},
    "service": {"protocol", "transport", "contract", "client"},
    "local": {"protocol", "transport", "contract", "client", "service"},
}
MAX_MODULES_PER_ROOM = 15


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["tfteach", "distributed"] and len(parts) > 2 else None


def test_every_module_lives_in_a_room():
    loose = [p.name for p in DISTRIBUTED.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"modules outside a room in tfteach/distributed: {loose}"
    rooms = {p.name for p in DISTRIBUTED.iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(MAY_IMPORT), f"rooms on disk {sorted(rooms)} != {sorted(MAY_IMPORT)}"


def test_rooms_import_only_lower_rooms_type_checking_included():
    bad = []
    for here, imported in import_graph(DISTRIBUTED, type_checking=True).items():
        room = _room(here)
        for other in {_room(m) for m in imported} - {None, room}:
            if room is not None and other not in MAY_IMPORT[room]:
                bad.append(f"{here} -> tfteach.distributed.{other}")
    assert not bad, "imports against the rooms' rules:\n  " + "\n  ".join(sorted(bad))


def test_no_cycles_in_distributed_type_checking_included():
    cycles = import_cycles(import_graph(DISTRIBUTED, type_checking=True))
    assert not cycles, "cycles: " + "; ".join(", ".join(c) for c in cycles)


def test_each_room_states_its_rule_and_stays_small():
    for room, allowed in MAY_IMPORT.items():
        doc = ast.get_docstring(ast.parse((DISTRIBUTED / room / "__init__.py").read_text()))
        rule = re.search(r"Rule: imports only (.*?)\s*\(", doc or "", re.S)
        assert rule, f"tfteach/distributed/{room}/__init__.py has no 'Rule: imports only' line"
        named = set(re.findall(r"\b(" + "|".join(MAY_IMPORT) + r")\b", rule.group(1)))
        assert named == allowed, f"{room}'s docstring names {sorted(named)}, rule is {sorted(allowed)}"
        modules = [p for p in (DISTRIBUTED / room).rglob("*.py") if p.name != "__init__.py"
                   and "_pb2" not in p.name]
        assert len(modules) <= MAX_MODULES_PER_ROOM, f"{room} has {len(modules)} modules"


def test_no_two_modules_share_a_file_name():
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(module_name(path))
    clashes = {name: mods for name, mods in seen.items() if len(mods) > 1}
    assert not clashes, f"file names used twice: {clashes}"


def test_room_rule_table_matches_the_docstring():
    assert set(MAY_IMPORT) == set(re.findall(r"^(\w+)\s{2,}", __doc__, re.M)) - {"room"}
