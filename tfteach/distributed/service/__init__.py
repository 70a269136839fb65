"""The gRPC server of one task: thin servicers for the master and worker services, and
the Server that binds them to the cluster spec's address.

Rule: imports only protocol, transport, contract and client (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING
imports included).
"""
