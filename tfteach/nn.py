"""``tf.nn``: activations, softmax, cross-entropies, bias_add, l2_loss, dropout and
embedding_lookup.

The ops themselves (kernels, shapes, gradients) live in ``tfteach.ops.nn_ops`` and
``tfteach.ops.embedding_ops``; this module is the public namespace, named as in TF 1.x.
"""
from tfteach.ops.embedding_ops import embedding_lookup
from tfteach.ops.nn_ops import (bias_add, dropout, l2_loss, leaky_relu, log_softmax, relu,
                                relu6, sigmoid, softmax, softmax_cross_entropy_with_logits,
                                softmax_cross_entropy_with_logits_v2, softplus,
                                sparse_softmax_cross_entropy_with_logits, tanh, xw_plus_b)

__all__ = ["bias_add", "dropout", "embedding_lookup", "l2_loss", "leaky_relu", "log_softmax",
           "relu", "relu6", "sigmoid", "softmax", "softmax_cross_entropy_with_logits",
           "softmax_cross_entropy_with_logits_v2", "softplus",
           "sparse_softmax_cross_entropy_with_logits", "tanh", "xw_plus_b"]
