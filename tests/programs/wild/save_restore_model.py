"""Saving and restoring a model in the shape of the example repositories'
save_restore_model: train a multilayer perceptron, save it with a Saver, build the same
graph again, restore the weights into a fresh session, check the accuracy is the same,
train on from there, then restore the first checkpoint by tf.train.latest_checkpoint.

Changed for both runtimes: weights and data from a seeded NumPy generator, small layers.
"""
import os
import sys

import numpy as np

from wild_tf import tf

model_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/save_restore"
model_path = os.path.join(model_dir, "model.ckpt")
rng = np.random.RandomState(5)
init_w1 = rng.normal(0, 0.2, size=(10, 12)).astype(np.float32)
init_w2 = rng.normal(0, 0.2, size=(12, 2)).astype(np.float32)
data = rng.normal(0, 1, size=(200, 10)).astype(np.float32)
labels = np.eye(2, dtype=np.float32)[(data[:, 0] + data[:, 1] > 0).astype(int)]


def build():
    x = tf.placeholder("float", [None, 10])
    y = tf.placeholder("float", [None, 2])
    h1 = tf.Variable(init_w1, name="h1")
    out = tf.Variable(init_w2, name="out")
    b1 = tf.Variable(tf.zeros([12]), name="b1")
    bout = tf.Variable(tf.zeros([2]), name="bout")
    pred = tf.matmul(tf.nn.relu(tf.matmul(x, h1) + b1), out) + bout
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=pred, labels=y))
    step = tf.train.AdamOptimizer(learning_rate=0.01).minimize(cost)
    correct = tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1))
    accuracy = tf.reduce_mean(tf.cast(correct, "float"))
    return x, y, cost, step, accuracy


def train(sess, x, y, cost, step, epochs):
    for epoch in range(epochs):
        avg = 0.0
        for i in range(4):
            batch = slice(50 * i, 50 * i + 50)
            _, c = sess.run([step, cost], feed_dict={x: data[batch], y: labels[batch]})
            avg += c / 4
        print("Epoch:", "%04d" % (epoch + 1), "cost=", "{:.6f}".format(avg))


print("Starting 1st session...")
x, y, cost, step, accuracy = build()
init = tf.global_variables_initializer()
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(init)
    train(sess, x, y, cost, step, 3)
    first_accuracy = accuracy.eval({x: data, y: labels})
    print("Accuracy: %.4f" % first_accuracy)
    save_path = saver.save(sess, model_path, global_step=3)
    print("Model saved in file: %s" % os.path.basename(save_path))

tf.reset_default_graph()
print("Starting 2nd session...")
x, y, cost, step, accuracy = build()
saver = tf.train.Saver()
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    saver.restore(sess, save_path)
    print("Model restored from file: %s" % os.path.basename(save_path))
    print("Same accuracy: %s" % (accuracy.eval({x: data, y: labels}) == first_accuracy))
    train(sess, x, y, cost, step, 3)
    print("Accuracy: %.4f" % accuracy.eval({x: data, y: labels}))
    saver.save(sess, model_path, global_step=6)
    latest = tf.train.latest_checkpoint(model_dir)
    print("latest checkpoint:", os.path.basename(latest))
    saver.restore(sess, save_path)
    print("back to the first: %s" % (accuracy.eval({x: data, y: labels}) == first_accuracy))
