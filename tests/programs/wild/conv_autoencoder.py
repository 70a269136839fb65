"""Transposed and separable convolutions in the shapes learners meet them: a DCGAN-style
generator (dense, reshape, tf.layers.conv2d_transpose up to the image, tf.nn.conv2d_transpose
by hand), a discriminator with tf.layers.separable_conv2d and tf.nn.depthwise_conv2d, and
a 1-D convolution over a signal (tf.nn.conv1d), trained together as an autoencoder.

Changed for both runtimes: the variables start at values from a seeded NumPy generator
(assigned after initialisation), small synthetic 8x8 images.
"""
import numpy as np

from wild_tf import tf

rng = np.random.RandomState(6)
images = rng.uniform(0, 1, size=(16, 8, 8, 1)).astype(np.float32)
signal = np.sin(np.linspace(0, 6, 16 * 12)).reshape(16, 12, 1).astype(np.float32)

x = tf.placeholder(tf.float32, [None, 8, 8, 1], name="x")
s = tf.placeholder(tf.float32, [None, 12, 1], name="signal")

with tf.variable_scope("encoder"):
    h = tf.layers.separable_conv2d(x, 4, 3, strides=2, padding="same", depth_multiplier=2,
                                   activation=tf.nn.relu)
    dw = tf.get_variable("depthwise", [3, 3, 4, 1])
    h = tf.nn.relu(tf.nn.depthwise_conv2d(h, dw, [1, 2, 2, 1], "SAME"))
    code = tf.layers.dense(tf.reshape(h, [-1, 2 * 2 * 4]), 6, activation=tf.nn.tanh)

with tf.variable_scope("generator"):
    g = tf.reshape(tf.layers.dense(code, 2 * 2 * 8), [-1, 2, 2, 8])
    g = tf.layers.conv2d_transpose(g, 4, 3, strides=2, padding="same", activation=tf.nn.relu)
    up = tf.get_variable("up", [3, 3, 1, 4])
    batch = tf.shape(g)[0]
    recon = tf.nn.sigmoid(tf.nn.conv2d_transpose(g, up, tf.stack([batch, 8, 8, 1]),
                                                 [1, 2, 2, 1], "SAME"))

with tf.variable_scope("signal"):
    f1 = tf.get_variable("filters", [3, 1, 2])
    smooth = tf.nn.conv1d(s, f1, 1, "SAME")

loss = tf.reduce_mean(tf.square(recon - x)) + tf.reduce_mean(tf.square(smooth[:, :, 0] - s[:, :, 0]))
train = tf.train.AdamOptimizer(0.05).minimize(loss)

print("variables:", [(v.op.name, v.shape.as_list()) for v in tf.trainable_variables()])
print("shapes:", h.shape.as_list(), g.shape.as_list(), recon.shape.as_list(),
      smooth.shape.as_list())
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for v in tf.trainable_variables():
        sess.run(v.assign(rng.normal(0, 0.3, size=v.shape.as_list()).astype(np.float32)))
    feed = {x: images, s: signal}
    for step in range(6):
        _, value = sess.run([train, loss], feed)
        print("step %d: loss %.5f" % (step, value))
    print("reconstruction of image 0, row 3:", np.round(sess.run(recon, feed)[0, 3, :, 0], 4).tolist())
