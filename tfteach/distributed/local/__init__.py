"""Clusters on one machine: LocalCluster, task processes and their registry, tasks
that run real TensorFlow, and the ``tfteach-server`` command line.

Rule: imports only protocol, transport, contract, client and service (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING
imports included).
"""
