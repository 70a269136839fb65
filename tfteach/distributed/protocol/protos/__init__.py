"""Generated protobuf/gRPC modules for tfteach's cluster protocol (see tfteach_cluster.proto).

Regenerate after editing the .proto with ``python -m tfteach.distributed.protocol.protos.regen_cluster``.
"""
