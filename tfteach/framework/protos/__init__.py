"""TensorFlow's file formats as protobuf messages (see tfteach_tf_formats.proto).

``tfteach_tf_formats_pb2`` is generated and committed; regenerate it after editing the
.proto with ``python -m tfteach.framework.protos.regen_graph``. The messages have TensorFlow's
field numbers in tfteach's own package (``tfteach.tfproto``), so they write and read
TensorFlow's bytes without TensorFlow installed, and never clash with it when it is.
"""
