"""Softmax regression on MNIST-shaped data, in the shape of TF's mnist_softmax tutorial:
argparse flags handed to ``tf.app.run``, zero-initialised weights, softmax cross-entropy,
plain gradient descent, then the accuracy on held-out examples.

Synthetic data instead of the download: 28x28 "images" whose class is where the bright
rows are, drawn from a seeded NumPy generator.
"""
import argparse
import sys

import numpy as np

from wild_tf import tf

FLAGS = None


def synthetic_digits(rng, n):
    labels = rng.randint(0, 10, size=n)
    images = rng.uniform(0.0, 0.2, size=(n, 28, 28)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, 2 * label + 3: 2 * label + 6, :] += 0.8
    return images.reshape(n, 784), np.eye(10, dtype=np.float32)[labels]


def main(_):
    rng = np.random.RandomState(FLAGS.seed)
    train_x, train_y = synthetic_digits(rng, 600)
    test_x, test_y = synthetic_digits(rng, 200)

    x = tf.placeholder(tf.float32, [None, 784])
    W = tf.Variable(tf.zeros([784, 10]))
    b = tf.Variable(tf.zeros([10]))
    y = tf.matmul(x, W) + b
    y_ = tf.placeholder(tf.float32, [None, 10])
    cross_entropy = tf.reduce_mean(
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=y_, logits=y))
    train_step = tf.train.GradientDescentOptimizer(0.5).minimize(cross_entropy)

    sess = tf.InteractiveSession()
    tf.global_variables_initializer().run()
    for step in range(FLAGS.steps):
        lo = (step * 50) % 600
        _, loss = sess.run([train_step, cross_entropy],
                           feed_dict={x: train_x[lo:lo + 50], y_: train_y[lo:lo + 50]})
        if step % 5 == 0:
            print("step %d loss %.6f" % (step, loss))

    correct_prediction = tf.equal(tf.argmax(y, 1), tf.argmax(y_, 1))
    accuracy = tf.reduce_mean(tf.cast(correct_prediction, tf.float32))
    print("accuracy %.4f" % sess.run(accuracy, feed_dict={x: test_x, y_: test_y}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data_dir", type=str, default="/tmp/mnist_data")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    FLAGS, unparsed = parser.parse_known_args()
    tf.app.run(main=main, argv=[sys.argv[0]] + unparsed)
