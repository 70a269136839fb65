"""The caller's side of a cluster: ClusterClient, one route per task (how calls travel,
with their deadlines), the per-method stubs, remote sessions, waiting for tasks, the
in-process master shortcut and the owner's lifetime checks.

Rule: imports only protocol, transport and contract (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING
imports included).
"""
