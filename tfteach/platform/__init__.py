"""TF 1.x's program scaffolding: ``tf.app`` (``run``), ``tf.flags`` (absl's flags, parsed
from ``sys.argv`` as TF does) and ``tf.gfile`` (local files with TF's errors).

Framework layer: imports only ``tfteach.errors`` and ``tfteach.i18n`` (and absl-py).
"""
