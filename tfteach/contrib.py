"""``tf.contrib``: TF 1.x's contributed modules, of which tfteach has ``rnn`` (the recurrent
cells and ``static_rnn``, as ``tf.nn.rnn_cell`` has them). TensorFlow 2's ``compat.v1`` has no
``contrib``: a program that uses it runs on tfteach and on TF 1.x, not on TF 2. Any other
``tf.contrib`` name is an AttributeError that says so."""
from tfteach.errors import missing_attribute
from tfteach.ops import contrib_rnn as rnn

__all__ = ["rnn"]


def __getattr__(name: str):
    """A name tf.contrib had and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.contrib", f"tf.contrib.{name}", name)
