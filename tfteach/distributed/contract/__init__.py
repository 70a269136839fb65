"""What an engine, a session target and a transfer kernel agree on: the engine API,
step arguments and results, the rendezvous and the _Send/_Recv kernels, the modelled network.

Rule: imports only protocol (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING
imports included).
"""
