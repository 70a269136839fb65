"""``tf.nn.rnn_cell``: TF 1.x's recurrent cells (``rnn_cell_impl``) and cell wrappers
(``rnn_cell_wrappers``) under TF's names; a name TF has here and tfteach lacks says so."""
from tfteach.errors import missing_attribute
from tfteach.ops.rnn_cell_impl import (BasicLSTMCell, BasicRNNCell, GRUCell, LSTMCell,
                                       LSTMStateTuple, MultiRNNCell, RNNCell)
from tfteach.ops.rnn_cell_wrappers import DeviceWrapper, DropoutWrapper, ResidualWrapper

__all__ = ["BasicLSTMCell", "BasicRNNCell", "DeviceWrapper", "DropoutWrapper", "GRUCell",
           "LSTMCell", "LSTMStateTuple", "MultiRNNCell", "RNNCell", "ResidualWrapper"]


def __getattr__(name: str):
    """A name tf.nn.rnn_cell has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.nn.rnn_cell", f"tf.nn.rnn_cell.{name}", name)
