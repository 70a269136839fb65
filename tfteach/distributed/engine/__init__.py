"""Engines behind a task's services: the graph engine that runs partitions on tfteach's
executor, and the probe engine that tests use to look at calls.

Rule: imports only contract, client and master (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING
imports included).
"""
