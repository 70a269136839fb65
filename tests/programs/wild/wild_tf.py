"""The runtime a corpus program runs on: ``from wild_tf import tf``.

``WILD_BACKEND=tensorflow`` gives real TensorFlow's ``compat.v1`` in graph mode; anything
else (the default) gives tfteach. A learner's own program has ``import tensorflow as tf``
here; this one line is the only change the corpus makes to run the same file on both.
"""
import os

if os.environ.get("WILD_BACKEND", "tfteach") == "tensorflow":
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
else:
    import tfteach as tf

__all__ = ["tf"]
