"""Control flow in a graph as TF 1.x programs write it: tf.cond choosing a branch from a
fed boolean (a training switch), tf.while_loop summing a series and iterating Newton's
method for a square root, and gradients through both.
"""
import numpy as np

from wild_tf import tf

is_training = tf.placeholder(tf.bool, [], name="is_training")
x = tf.placeholder(tf.float32, [None], name="x")
scaled = tf.cond(is_training, lambda: x * 2.0, lambda: x - 1.0)

i0 = tf.constant(0)
total0 = tf.constant(0.0)
_, series = tf.while_loop(lambda i, t: i < 10,
                          lambda i, t: (i + 1, t + 1.0 / tf.cast((i + 1) * (i + 1), tf.float32)),
                          [i0, total0])

a = tf.Variable(2.0)
_, root = tf.while_loop(lambda k, r: k < 6, lambda k, r: (k + 1, 0.5 * (r + a / r)),
                        [tf.constant(0), tf.constant(1.0)])
grad_root = tf.gradients(root, a)[0]
grad_cond = tf.gradients(tf.reduce_sum(scaled), x)[0]

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    data = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    print("training branch:", sess.run(scaled, {x: data, is_training: True}).tolist())
    print("inference branch:", sess.run(scaled, {x: data, is_training: False}).tolist())
    print("sum of 1/n^2 for n <= 10: %.6f" % sess.run(series))
    print("sqrt(2) by Newton: %.6f, d/da: %.6f" % tuple(sess.run([root, grad_root])))
    print("gradient through cond:", sess.run(grad_cond, {x: data, is_training: True}).tolist())
