"""How bytes travel between processes: TLS and token security, peer identity,
shared-memory segments and their proof, the lane, the bulk TCP port and its tensors in
parts, reused receive buffers and the tensor wire format.

Rule: imports only protocol (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING
imports included).
"""
