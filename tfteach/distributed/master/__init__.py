"""The master's work: a master session partitions a graph across tasks, runs it in
phases, and describes each part as NodeDefs.

Rule: imports only contract and client (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING
imports included).
"""
