"""A deep convolutional MNIST classifier in the shape of TF's mnist_deep tutorial: helper
functions for weights, conv2d and 2x2 max pooling, two conv layers, a dense layer with
dropout (``keep_prob`` fed), Adam, and the accuracy printed as training goes.

Changed for both runtimes: weights from a seeded NumPy generator (the runtimes' random ops
draw different numbers), small layers, 16 synthetic examples per step, and ``keep_prob``
1.0 while training so the run is the same on both (the dropout op is still built and run).
"""
import numpy as np

from wild_tf import tf

rng = np.random.RandomState(1)


def weight_variable(shape):
    initial = np.clip(rng.normal(0.0, 0.1, size=shape), -0.2, 0.2).astype(np.float32)
    return tf.Variable(initial)


def bias_variable(shape):
    return tf.Variable(tf.constant(0.1, shape=shape))


def conv2d(x, W):
    return tf.nn.conv2d(x, W, strides=[1, 1, 1, 1], padding="SAME")


def max_pool_2x2(x):
    return tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")


def deepnn(x):
    with tf.name_scope("reshape"):
        x_image = tf.reshape(x, [-1, 28, 28, 1])
    with tf.name_scope("conv1"):
        W_conv1 = weight_variable([5, 5, 1, 8])
        h_conv1 = tf.nn.relu(conv2d(x_image, W_conv1) + bias_variable([8]))
    with tf.name_scope("pool1"):
        h_pool1 = max_pool_2x2(h_conv1)
    with tf.name_scope("conv2"):
        W_conv2 = weight_variable([5, 5, 8, 16])
        h_conv2 = tf.nn.relu(conv2d(h_pool1, W_conv2) + bias_variable([16]))
    with tf.name_scope("pool2"):
        h_pool2 = max_pool_2x2(h_conv2)
    with tf.name_scope("fc1"):
        W_fc1 = weight_variable([7 * 7 * 16, 64])
        h_pool2_flat = tf.reshape(h_pool2, [-1, 7 * 7 * 16])
        h_fc1 = tf.nn.relu(tf.matmul(h_pool2_flat, W_fc1) + bias_variable([64]))
    with tf.name_scope("dropout"):
        keep_prob = tf.placeholder(tf.float32)
        h_fc1_drop = tf.nn.dropout(h_fc1, keep_prob)
    with tf.name_scope("fc2"):
        y_conv = tf.matmul(h_fc1_drop, weight_variable([64, 10])) + bias_variable([10])
    return y_conv, keep_prob


def batches(n):
    labels = rng.randint(0, 10, size=n)
    images = rng.uniform(0.0, 0.3, size=(n, 28, 28)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, :, 2 * label + 3: 2 * label + 6] += 0.7
    return images.reshape(n, 784), np.eye(10, dtype=np.float32)[labels]


x = tf.placeholder(tf.float32, [None, 784])
y_ = tf.placeholder(tf.float32, [None, 10])
y_conv, keep_prob = deepnn(x)
with tf.name_scope("loss"):
    cross_entropy = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y_conv))
with tf.name_scope("adam_optimizer"):
    train_step = tf.train.AdamOptimizer(1e-3).minimize(cross_entropy)
with tf.name_scope("accuracy"):
    correct_prediction = tf.cast(tf.equal(tf.argmax(y_conv, 1), tf.argmax(y_, 1)), tf.float32)
    accuracy = tf.reduce_mean(correct_prediction)

train_x, train_y = batches(96)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(12):
        lo = (i * 16) % 96
        feed = {x: train_x[lo:lo + 16], y_: train_y[lo:lo + 16], keep_prob: 1.0}
        if i % 4 == 0:
            print("step %d, training accuracy %g, loss %.5f"
                  % (i, accuracy.eval(feed_dict=feed), cross_entropy.eval(feed_dict=feed)))
        train_step.run(feed_dict=feed)
    print("final loss %.5f" % cross_entropy.eval(
        feed_dict={x: train_x, y_: train_y, keep_prob: 1.0}))
