"""Exponential moving averages in the shape of TF's CIFAR-10 train/eval pair: training
keeps moving averages of the weights (ExponentialMovingAverage with the global step as
num_updates, the average op run after each optimizer step through control_dependencies),
saves a checkpoint, and the evaluation graph restores the averaged weights through
ema.variables_to_restore() instead of the raw ones.

Changed for both runtimes: a linear model on synthetic data from a seeded NumPy
generator, few steps.
"""
import os
import sys

import numpy as np

from wild_tf import tf

train_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ema_train"
MOVING_AVERAGE_DECAY = 0.9
rng = np.random.RandomState(11)
data = rng.normal(0, 1, size=(64, 4)).astype(np.float32)
target = (data @ np.array([[1.0], [-2.0], [0.5], [3.0]]) + 0.25).astype(np.float32)


def model(x):
    w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer())
    b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
    return tf.matmul(x, w) + b


with tf.Graph().as_default():
    global_step = tf.train.get_or_create_global_step()
    x = tf.constant(data)
    loss = tf.reduce_mean(tf.square(model(x) - target))
    opt_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    ema = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY, global_step)
    with tf.control_dependencies([opt_op]):
        train_op = ema.apply(tf.trainable_variables())
    print("shadow names:", sorted(ema.average_name(v) for v in tf.trainable_variables()))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(20):
            _, l = sess.run([train_op, loss])
            if step % 5 == 4:
                print("step %d loss %.6f" % (step + 1, l))
        raw = sess.run(tf.trainable_variables()[0])
        path = saver.save(sess, os.path.join(train_dir, "model.ckpt"), global_step=global_step)
        print("raw w: %s" % np.array2string(raw.ravel(), precision=5))

with tf.Graph().as_default():
    x = tf.constant(data)
    loss = tf.reduce_mean(tf.square(model(x) - target))
    ema = tf.train.ExponentialMovingAverage(MOVING_AVERAGE_DECAY)
    variables_to_restore = ema.variables_to_restore()
    print("restore map:", sorted(variables_to_restore))
    saver = tf.train.Saver(variables_to_restore)
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(train_dir))
        averaged = sess.run(tf.trainable_variables()[0])
        print("averaged w: %s" % np.array2string(averaged.ravel(), precision=5))
        print("eval loss with averages %.6f" % sess.run(loss))
