"""``tf.io``: TFRecord files (``TFRecordWriter``, ``tf_record_iterator``, ``TFRecordOptions``,
``TFRecordCompressionType``, from ``tfteach.platform.python_io``) and the parsing ops
``decode_csv`` and ``decode_raw`` (``tfteach.ops.parsing_ops``), named as in TF 1.x."""
from tfteach.errors import missing_attribute
from tfteach.ops.parsing_ops import decode_csv, decode_raw
from tfteach.platform.python_io import (TFRecordCompressionType, TFRecordOptions,
                                        TFRecordWriter, tf_record_iterator)

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "decode_csv",
           "decode_raw", "tf_record_iterator"]


def __getattr__(name: str):
    """A name tf.io has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.io", f"tf.io.{name}", name)
