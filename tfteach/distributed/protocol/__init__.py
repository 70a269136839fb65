"""What goes on the wire and what it means: the protobuf messages, size limits, the
status codes that carry TF's error classes, the cluster spec and the task log.

Rule: imports only the standard library, grpc and tfteach's lower
layers, no other room (tests/misc/test_distributed_rooms.py checks it, TYPE_CHECKING imports
included).
"""
