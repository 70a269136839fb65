"""``tf.nn``: activations, softmax, cross-entropies, bias_add, l2_loss, dropout,
embedding_lookup, l2_normalize, sigmoid/weighted cross-entropies (``nn_impl``), convolution,
pooling, normalisation (lrn, fused_batch_norm, moments, batch_normalization), zero_fraction,
and recurrent networks (``rnn_cell``, ``static_rnn``, ``dynamic_rnn``).

The ops themselves (kernels, shapes, gradients) live in ``tfteach.ops.nn_ops``,
``embedding_ops``, ``conv_ops``, ``pooling_ops``, ``normalization_ops`` and
``summary_stats``; this module is the public namespace, named as in TF 1.x.
"""
from tfteach.errors import missing_attribute
from tfteach.ops.conv_composites import conv1d, conv2d_transpose, separable_conv2d
from tfteach.ops.conv_ops import conv2d
from tfteach.ops.depthwise_conv_ops import depthwise_conv2d, depthwise_conv2d_native
from tfteach.ops.elu_ops import elu, selu
from tfteach.ops.embedding_ops import embedding_lookup
from tfteach.ops.nn_impl import (l2_normalize, sigmoid_cross_entropy_with_logits,
                                 weighted_cross_entropy_with_logits)
from tfteach.ops.nn_ops import (bias_add, dropout, l2_loss, leaky_relu, log_softmax, relu,
                                relu6, sigmoid, softmax, softmax_cross_entropy_with_logits,
                                softmax_cross_entropy_with_logits_v2, softplus,
                                sparse_softmax_cross_entropy_with_logits, tanh, xw_plus_b)
from tfteach.ops.normalization_ops import (batch_normalization, fused_batch_norm,
                                           local_response_normalization, lrn, moments)
from tfteach.ops import rnn_cell_namespace as rnn_cell
from tfteach.ops.pooling_ops import avg_pool, max_pool
from tfteach.ops.rnn import (bidirectional_dynamic_rnn, dynamic_rnn,
                             static_bidirectional_rnn, static_rnn)
from tfteach.ops.summary_stats import zero_fraction
from tfteach.ops.top_k_ops import in_top_k, top_k

__all__ = ["avg_pool", "batch_normalization", "bias_add", "conv2d", "dropout", "elu", "embedding_lookup",
           "fused_batch_norm", "l2_loss", "l2_normalize", "leaky_relu",
           "local_response_normalization", "log_softmax", "lrn", "max_pool", "moments", "relu",
           "relu6", "selu", "sigmoid", "sigmoid_cross_entropy_with_logits", "softmax",
           "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "softplus",
           "sparse_softmax_cross_entropy_with_logits", "tanh", "weighted_cross_entropy_with_logits",
           "xw_plus_b", "zero_fraction", "in_top_k", "top_k", "conv1d", "conv2d_transpose",
           "depthwise_conv2d", "depthwise_conv2d_native", "separable_conv2d", "rnn_cell",
           "dynamic_rnn", "static_rnn", "bidirectional_dynamic_rnn", "static_bidirectional_rnn"]


def __getattr__(name: str):
    """A name tf.nn has and tfteach lacks: an AttributeError that says so."""
    raise missing_attribute("tfteach.nn", f"tf.nn.{name}", name)
