"""TensorBoard summaries in the shape of the example repositories' tensorboard_advanced:
name scopes for the model, loss, optimizer and accuracy; histograms of activations,
weights and gradients; scalar summaries; merge_all; a FileWriter with the graph; one
summary per step; then the event file read back for its tags and steps.

Changed for both runtimes: weights and data from a seeded NumPy generator, small layers,
few steps, and the log folder from the command line. The optimizer and the loss run in
one step, as in the original, so an update may land before the backward pass reads a
weight (in TF as here): numbers agree to 1 %. The program ends by counting the
event files it wrote (tests/train and tests/conformance read tfteach's events back).
"""
import glob
import os
import sys

import numpy as np

from wild_tf import tf

logs_path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tensorflow_logs/example"
rng = np.random.RandomState(3)
n_input, n_hidden, n_classes = 20, 16, 3


def variable(shape, name):
    return tf.Variable((rng.normal(0, 0.3, size=shape)).astype(np.float32), name=name)


x = tf.placeholder(tf.float32, [None, n_input], name="InputData")
y = tf.placeholder(tf.float32, [None, n_classes], name="LabelData")
weights = {"w1": variable([n_input, n_hidden], "W1"), "w2": variable([n_hidden, n_classes], "W2")}
biases = {"b1": variable([n_hidden], "b1"), "b2": variable([n_classes], "b2")}


def multilayer_perceptron(x, weights, biases):
    layer_1 = tf.nn.relu(tf.add(tf.matmul(x, weights["w1"]), biases["b1"]))
    tf.summary.histogram("relu1", layer_1)
    return tf.add(tf.matmul(layer_1, weights["w2"]), biases["b2"])


with tf.name_scope("Model"):
    pred = multilayer_perceptron(x, weights, biases)
with tf.name_scope("Loss"):
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=pred, labels=y))
with tf.name_scope("SGD"):
    optimizer = tf.train.GradientDescentOptimizer(0.1)
    grads = tf.gradients(loss, tf.trainable_variables())
    grads = list(zip(grads, tf.trainable_variables(), strict=True))
    apply_grads = optimizer.apply_gradients(grads_and_vars=grads)
with tf.name_scope("Accuracy"):
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(pred, 1), tf.argmax(y, 1)), tf.float32))

init = tf.global_variables_initializer()
tf.summary.scalar("loss", loss)
tf.summary.scalar("accuracy", acc)
for var in tf.trainable_variables():
    tf.summary.histogram(var.name.replace(":", "_"), var)
for grad, var in grads:
    tf.summary.histogram(var.name.replace(":", "_") + "/gradient", grad)
merged_summary_op = tf.summary.merge_all()

labels = rng.randint(0, n_classes, size=120)
data = rng.normal(0, 1, size=(120, n_input)).astype(np.float32)
data[np.arange(120), labels] += 2.0
onehot = np.eye(n_classes, dtype=np.float32)[labels]

with tf.Session() as sess:
    sess.run(init)
    summary_writer = tf.summary.FileWriter(logs_path, graph=tf.get_default_graph())
    for epoch in range(4):
        avg_cost = 0.0
        for i in range(4):
            batch = slice(i * 30, i * 30 + 30)
            _, c, summary = sess.run([apply_grads, loss, merged_summary_op],
                                     feed_dict={x: data[batch], y: onehot[batch]})
            summary_writer.add_summary(summary, epoch * 4 + i)
            avg_cost += c / 4
        print("Epoch:", "%04d" % (epoch + 1), "cost=", "{:.6f}".format(avg_cost))
    summary_writer.close()
    print("Optimization Finished!")
    print("Accuracy above 0.6:", acc.eval({x: data, y: onehot}) > 0.6)
    print("summary is bytes:", isinstance(summary, bytes), "non-empty:", len(summary) > 0)
print("event files:", len(glob.glob(os.path.join(logs_path, "events.out.tfevents.*"))))
