"""float16 softmax and cross entropies against TensorFlow, with rows far apart (a row whose
exps all underflow in float16 when the whole tensor's max is subtracted): the LeNet
tutorial's ``--use_fp16`` run (tensorflow/models tutorials/image/mnist/convolutional.py)
needs finite values there, as TF gives."""
from __future__ import annotations

import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

LOGITS = np.array([[1.0, 2.0, 3.0], [-20.0, -21.0, -19.0], [8.0, -8.0, 0.5]], np.float16)
LABELS = np.array([0, 1, 2], np.int64)


def _run(lib):
    with lib.Graph().as_default():
        x = lib.constant(LOGITS)
        one_hot = lib.constant(np.eye(3, dtype=np.float16)[LABELS])
        sparse = lib.nn.sparse_softmax_cross_entropy_with_logits(
            labels=lib.constant(LABELS), logits=x)
        dense = lib.nn.softmax_cross_entropy_with_logits(labels=one_hot, logits=x)
        ys = [lib.nn.softmax(x), lib.nn.log_softmax(x), sparse, dense,
              lib.gradients(lib.reduce_sum(sparse), x)[0]]
        with lib.Session() as sess:
            return sess.run(ys)


def test_float16_softmax_and_cross_entropies_are_tensorflows():
    ours, theirs = _run(tf), _run(tf1)
    for got, want in zip(ours, theirs, strict=True):
        assert got.dtype == want.dtype == np.float16
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32),
                                   rtol=2e-3, atol=2e-3)
