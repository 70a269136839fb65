"""Small real data sets for the lessons, and helpers to feed them to a graph.

- ``load_digits()``: the 1797 UCI handwritten digits (8x8 pixels, values 0..16), shipped
  inside this package (``digits.csv.gz``; origin and licence in ``DATA_LICENSE``).
- ``load_mnist(path)``: MNIST, read from the four IDX files a learner already has.
- ``batches()``: one epoch of ``(x, y)`` mini-batches; ``shard()``: one worker's slice of
  the data in between-graph replication.

Every loader returns ``((x_train, y_train), (x_test, y_test))``: ``x`` is float32
``[n, pixels]`` with the raw pixel values (not scaled), ``y`` is int64 class labels.
Nothing here downloads anything, and every call returns fresh arrays the caller may change.

It is also TF's ``tf.data``: ``Dataset``, ``TextLineDataset``, ``TFRecordDataset``, ``Iterator``,
``make_one_shot_iterator``, ``make_initializable_iterator`` and ``experimental.AUTOTUNE``,
graph ops built in ``tfteach.ops.dataset_ops`` and ``tfteach.ops.iterator_ops`` (so this
package sits in the ops layer).
"""
from tfteach.data import experimental
from tfteach.data.batching import batches, shard
from tfteach.data.digits import load_digits
from tfteach.data.mnist import load_mnist
from tfteach.ops.dataset_file_ops import TextLineDataset, TFRecordDataset
from tfteach.ops.dataset_ops import Dataset
from tfteach.ops.iterator_ops import Iterator, make_initializable_iterator, make_one_shot_iterator

__all__ = ["load_digits", "load_mnist", "batches", "shard", "Dataset", "TextLineDataset", "TFRecordDataset",
           "Iterator", "make_initializable_iterator", "make_one_shot_iterator", "experimental"]
