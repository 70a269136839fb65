"""``tf.contrib.rnn``: where TF 1.x programs of the contrib era find the recurrent cells, the
cell wrappers, ``static_rnn`` and ``static_bidirectional_rnn`` (the same objects as ``tf.nn.rnn_cell`` and
``tf.nn.static_rnn``); a name TF had here and tfteach lacks says so."""
from tfteach.errors import missing_attribute
from tfteach.ops.rnn import static_bidirectional_rnn, static_rnn
from tfteach.ops.rnn_cell_impl import (BasicLSTMCell, BasicRNNCell, GRUCell, LSTMCell,
                                       LSTMStateTuple, MultiRNNCell, RNNCell)
from tfteach.ops.rnn_cell_wrappers import DeviceWrapper, DropoutWrapper, ResidualWrapper

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper",
           "static_bidirectional_rnn", "static_rnn"]


def __getattr__(name: str):
    """A name tf.contrib.rnn had and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.contrib.rnn", f"tf.contrib.rnn.{name}", name)
