"""Gradients stop at random samples as in TensorFlow: ``RandomStandardNormal``,
``RandomUniform``, ``TruncatedNormal`` and ``RandomShuffle`` are not differentiable (no
LookupError), so a VAE's reparameterisation ``z = mean + exp(log_var / 2) * epsilon``, with
``epsilon = tf.random_normal(tf.shape(log_var))``, trains as in the public examples."""
from __future__ import annotations

import numpy as np
import pytest
from tf_oracle import tf1

import tfteach as tf

pytestmark = pytest.mark.conformance

SAMPLERS = {"random_normal": lambda lib, s: lib.random_normal(s),
            "random_uniform": lambda lib, s: lib.random_uniform(s),
            "truncated_normal": lambda lib, s: lib.truncated_normal(s),
            "random_shuffle": lambda lib, s: lib.random_shuffle(lib.cast(s, lib.float32))}


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_a_sample_passes_no_gradient_to_its_inputs(sampler):
    found = {}
    for lib in (tf, tf1):
        with lib.Graph().as_default():
            x = lib.constant([[1.0, 2.0, 3.0]])
            sample = SAMPLERS[sampler](lib, lib.shape(x) + 1)
            found[lib] = lib.gradients(lib.reduce_sum(sample) + lib.reduce_sum(x), x)
            with lib.Session() as sess:
                found[lib] = sess.run(found[lib])
    np.testing.assert_array_equal(found[tf][0], found[tf1][0])
    np.testing.assert_array_equal(found[tf][0], np.ones((1, 3), np.float32))


def _reparameterised(lib):
    with lib.Graph().as_default():
        mean = lib.Variable([[0.5, -1.0]])
        log_var = lib.Variable([[0.2, 0.4]])
        eps = lib.random_normal(lib.shape(log_var), mean=0.0, stddev=1.0, name="epsilon")
        z = mean + lib.exp(log_var / 2) * eps
        grads = lib.gradients(lib.reduce_sum(z), [mean, log_var])
        with lib.Session() as sess:
            sess.run(lib.global_variables_initializer())
            g_mean, g_log_var, e = sess.run(grads + [eps])
    return g_mean, g_log_var, e


def test_the_reparameterisation_trick_has_tensorflows_gradients():
    ours, theirs = _reparameterised(tf), _reparameterised(tf1)
    np.testing.assert_array_equal(ours[0], theirs[0])
    for g_log_var, e in (ours[1:], theirs[1:]):    # epsilon is drawn afresh on each side
        np.testing.assert_allclose(g_log_var, 0.5 * np.exp([[0.1, 0.2]]) * e, rtol=1e-6)
